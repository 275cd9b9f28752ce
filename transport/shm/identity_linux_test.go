//go:build linux

package shm

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

const (
	impersonateEnv = "ERPC_SHM_IMPERSONATE_SOCKET"
	claimsEnv      = "ERPC_SHM_IMPERSONATE_CLAIMS" // "addr|path;addr|path;..."
)

// TestImpersonatorHelper is a local process that connects to the listener
// at impersonateEnv once per claim, claiming in each hello an address (and
// a listening socket) that belong to another process; it sends
// "inject-<i>" on connection i and then reports every datagram it gets,
// as "GOT <i> <data>".
func TestImpersonatorHelper(t *testing.T) {
	path := os.Getenv(impersonateEnv)
	if path == "" {
		t.Skip("runs only as the impersonating process")
	}
	var peers []*rawPeer
	for i, c := range strings.Split(os.Getenv(claimsEnv), ";") {
		addr, sock, _ := strings.Cut(c, "|")
		o := rawOpts{seals: sealsNeeded, bell: -1, claim: netip.MustParseAddrPort(addr), path: sock}
		p, st, err := rawDial(path, minRingSize, o)
		say("HANDSHAKE %d %s %s", i, st, errText(err))
		peers = append(peers, p)
	}
	for i, p := range peers {
		if p != nil {
			p.out.put([]byte(fmt.Sprintf("inject-%d", i)), nil)
			p.ringListener()
		}
	}
	say("INJECTED")
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
		for i, p := range peers {
			if p == nil || !p.in.pending() {
				continue
			}
			for d, ok := p.in.next(); ok; d, ok = p.in.next() {
				say("GOT %d %s", i, d)
			}
			p.in.end()
		}
	}
}

type received struct {
	from netip.AddrPort
	data string
}

// recordingLoop runs tr's loop until the test ends: what it receives goes
// to in, what is written to out it sends.
type recordingLoop struct {
	tr  *Transport
	in  chan received
	out chan transport.Message
}

func startRecordingLoop(t *testing.T, tr *Transport) *recordingLoop {
	l := &recordingLoop{tr: tr, in: make(chan received, 100), out: make(chan transport.Message, 100)}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			n, _ := tr.Receive(func(from netip.AddrPort, data []byte) { l.in <- received{from, string(data)} })
			for more := true; more; {
				select {
				case m := <-l.out:
					tr.Send([]transport.Message{m})
				default:
					more = false
				}
			}
			if n == 0 {
				tr.Wait(time.Now().Add(5 * time.Millisecond))
			}
			tr.GonePeers(nil)
		}
	})
	t.Cleanup(func() { stop.Store(true); tr.Wake(); wg.Wait() })
	return l
}

func (l *recordingLoop) send(to netip.AddrPort, data string) {
	l.out <- transport.Message{To: to, Head: []byte(data)}
	l.tr.Wake()
}

// receiveOne waits up to 5 s for one datagram on tr (the caller is its
// loop).
func receiveOne(tr *Transport) (received, bool) {
	var got []received
	for end := time.Now().Add(5 * time.Second); len(got) == 0 && time.Now().Before(end); {
		if n, _ := tr.Receive(func(from netip.AddrPort, d []byte) { got = append(got, received{from, string(d)}) }); n == 0 {
			tr.Wait(time.Now().Add(5 * time.Millisecond))
		}
	}
	if len(got) == 0 {
		return received{}, false
	}
	return got[0], true
}

// TestHostileImpersonation: another local process connects to a listener
// claiming, in its handshake, the address of a listening transport of
// ours (with and without naming its socket) and that of a client-only
// transport of ours. It must not be taken for them: its datagrams must
// not arrive from their addresses (injection into their sessions), the
// victims must still connect and be known by their own addresses, and
// datagrams the listener sends to the victims must reach the victims, not
// the impersonator.
func TestHostileImpersonation(t *testing.T) {
	l, pathL := hostileListener(t, Options{})
	pathV, err := filepath.Abs(filepath.Join(filepath.Dir(pathL), "v.sock"))
	if err != nil {
		t.Fatal(err)
	}
	victim, err := Listen(pathV, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	client, err := Listen("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	victims := map[netip.AddrPort]string{victim.LocalAddr(): "victim listener", client.LocalAddr(): "victim client"}
	claims := []string{
		victim.LocalAddr().String(),
		victim.LocalAddr().String() + "|" + pathV,
		client.LocalAddr().String(),
	}
	h := startHelperProcess(t, "TestImpersonatorHelper", impersonateEnv+"="+pathL, claimsEnv+"="+strings.Join(claims, ";"))
	accepted := 0
	for i := range claims {
		if strings.HasPrefix(h.expect(t, fmt.Sprintf("HANDSHAKE %d ", i)), fmt.Sprintf("HANDSHAKE %d ok", i)) {
			accepted++
		}
	}
	h.expect(t, "INJECTED")
	loop := startRecordingLoop(t, l)

	// The victims connect after the impersonator, and say who they are.
	want := accepted
	for _, v := range []*Transport{victim, client} {
		to, err := v.Resolve(pathL)
		if err != nil {
			t.Errorf("%s cannot connect: %v", victims[v.LocalAddr()], err)
			continue
		}
		v.Send([]transport.Message{{To: to, Head: []byte("honest")}})
		want++
	}
	impostors := map[string]netip.AddrPort{} // "inject-<i>" -> the address it came from
	for range want {
		select {
		case r := <-loop.in:
			name, isVictim := victims[r.from]
			switch {
			case r.data == "honest" && !isVictim:
				t.Errorf("a victim's datagram arrived from %v, not its own address", r.from)
			case strings.HasPrefix(r.data, "inject-"):
				impostors[r.data] = r.from
				if isVictim {
					t.Errorf("the impersonator's %q arrived from the %s's address %v", r.data, name, r.from)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the listener received %d of %d datagrams", len(impostors), want)
		}
	}

	// What the listener sends to the victims goes to the victims; a
	// marker to each impersonating connection says when it has seen all.
	for a := range victims {
		loop.send(a, "secret")
	}
	for name, a := range impostors {
		loop.send(a, "marker-"+strings.TrimPrefix(name, "inject-"))
	}
	for _, v := range []*Transport{victim, client} {
		if r, ok := receiveOne(v); !ok || r.data != "secret" {
			t.Errorf("%s did not get its datagram (%v %q)", victims[v.LocalAddr()], ok, r.data)
		}
	}
	for seen := 0; seen < len(impostors); {
		line := h.expect(t, "GOT ")
		if strings.Contains(line, "marker-") {
			seen++
		} else {
			t.Errorf("the impersonator received the victim's datagram: %q", line)
		}
	}
	if n := l.Stats().Unverified; n != uint64(len(claims)) {
		t.Errorf("%d claims not vouched for, want %d (all)", n, len(claims))
	}
	for name, a := range impostors {
		if kind, pid, _ := addrKind(a); kind != kindAssigned || int(pid) != h.cmd.Process.Pid {
			t.Errorf("the impersonator's %s came from %v, want an assigned address with its pid %d", name, a, h.cmd.Process.Pid)
		}
	}
}

const honestEnv = "ERPC_SHM_HONEST_SOCKET"

// TestHonestPeerHelper is a well-behaved peer process: a listening
// transport (on the socket named by its argument) and a client-only one
// connect to the listener at honestEnv and send "hello" each; it reports
// their addresses.
func TestHonestPeerHelper(t *testing.T) {
	path := os.Getenv(honestEnv)
	if path == "" {
		t.Skip("runs only as the honest peer process")
	}
	own := filepath.Join(filepath.Dir(path), "honest.sock")
	for _, p := range []string{own, ""} {
		tr, err := Listen(p, Options{})
		if err != nil {
			say("LISTEN %v", err)
			return
		}
		defer tr.Close()
		to, err := tr.Resolve(path)
		if err == nil {
			err = tr.Send([]transport.Message{{To: to, Head: []byte("hello")}})
		}
		say("SENT %v %s", tr.LocalAddr(), errText(err))
	}
	time.Sleep(time.Minute) // until the test kills us
}

// TestCrossProcessIdentity: the addresses that another process's
// transports claim, a listener's and a client's, are vouched for by the
// kernel (pid in the client address; the listening socket's owner for the
// listener's), so the listener knows them by their own addresses, as the
// transport conformance suite requires within a process.
func TestCrossProcessIdentity(t *testing.T) {
	l, pathL := hostileListener(t, Options{})
	loop := startRecordingLoop(t, l)
	h := startHelperProcess(t, "TestHonestPeerHelper", honestEnv+"="+pathL)
	want := map[netip.AddrPort]bool{}
	for range 2 {
		f := strings.Fields(h.expect(t, "SENT "))
		if f[2] != "ok" {
			t.Fatalf("honest peer: %v", f)
		}
		want[netip.MustParseAddrPort(f[1])] = true
	}
	for range 2 {
		select {
		case r := <-loop.in:
			if !want[r.from] {
				t.Errorf("an honest peer's %q came from %v, not one of its addresses %v", r.data, r.from, want)
			}
			delete(want, r.from)
		case <-time.After(5 * time.Second):
			t.Fatal("the honest datagrams did not arrive")
		}
	}
	if n := l.Stats().Unverified; n != 0 {
		t.Errorf("%d honest claims not vouched for", n)
	}
}

// TestConnectorAddrClaims: seeded random claims against seeded random
// credentials. A claim is taken only if the kernel vouches for it (a
// client address holding the connector's pid; a listener address with
// the path of a socket of the connector's user that the connector's
// process listens on); every
// other connector gets an assigned address holding its pid, and no two
// get the same.
func TestConnectorAddrClaims(t *testing.T) {
	l, pathL := hostileListener(t, Options{})
	pathV, _ := filepath.Abs(filepath.Join(filepath.Dir(pathL), "v.sock"))
	v, err := Listen(pathV, Options{}) // a listener of this process
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ours, other := int32(os.Getpid()), int32(os.Getppid())
	r := rand.New(rand.NewPCG(27, 8))
	seen := map[netip.AddrPort]bool{}
	var verified, assigned, listeners int
	for i := range 2000 {
		uid := uint32(os.Getuid())
		cred := &unix.Ucred{Pid: []int32{ours, other, 0, 1 + r.Int32N(1<<22)}[r.IntN(4)], Uid: []uint32{uid, uid, uid + 1}[r.IntN(3)]}
		var claim netip.AddrPort
		sock := ""
		switch r.IntN(6) {
		case 0: // a client address with some pid, and that pid's start time or not
			pid := []int32{ours, other, cred.Pid, r.Int32()}[r.IntN(4)]
			rest := r.Uint64()
			if start, ok := startTime(pid); ok && r.IntN(2) == 0 {
				rest = uint64(start)<<16 | rest&0xffff
			}
			claim = shmAddr(kindClient, uint32(pid), rest)
		case 1: // the listener's address, with its socket or another path
			claim = v.LocalAddr()
			sock = []string{pathV, pathL, "", "v.sock", pathV + "/", pathV + "\x00"}[r.IntN(6)]
		case 2: // our own listener's address and socket
			claim, sock = l.LocalAddr(), pathL
		case 3: // an assigned address
			claim = shmAddr(kindAssigned, uint32(cred.Pid), r.Uint64())
		default: // anything
			var b [18]byte
			for j := range b {
				b[j] = byte(r.Uint32())
			}
			claim = getAddr(b[:])
		}
		want := false
		if kind, pid, ok := addrKind(claim); ok && cred.Pid > 0 {
			start, known := startTime(cred.Pid)
			b := claim.Addr().As16()
			want = kind == kindClient && pid == uint32(cred.Pid) && known && binary.BigEndian.Uint32(b[10:]) == start ||
				kind == kindListener && cred.Pid == ours && cred.Uid == uid && (sock == pathV && claim == v.LocalAddr() || sock == pathL && claim == l.LocalAddr())
		}
		got, ok, _, err := l.connectorAddr(cred, claim, sock, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if ok != want {
			t.Fatalf("%d: pid %d claiming %v %q: taken %v, want %v", i, cred.Pid, claim, sock, ok, want)
		}
		if ok {
			verified++
			if kind, _, _ := addrKind(claim); kind == kindListener {
				listeners++
			}
			if got != claim {
				t.Fatalf("%d: claim %v taken as %v", i, claim, got)
			}
			continue
		}
		assigned++
		if kind, pid, _ := addrKind(got); kind != kindAssigned || pid != uint32(max(cred.Pid, 0)) || seen[got] {
			t.Fatalf("%d: pid %d assigned %v (kind %d, pid %d, given before %v)", i, cred.Pid, got, kind, pid, seen[got])
		}
		seen[got] = true
	}
	if n := l.Stats().Unverified; n != uint64(assigned) || listeners == 0 || verified == listeners || assigned == 0 {
		t.Fatalf("%d taken (%d listeners'), %d assigned, %d counted", verified, listeners, assigned, n)
	}
	t.Logf("%d claims taken (%d listeners'), %d assigned", verified, listeners, assigned)
}
