//go:build linux

package shm

// Hostile peers: the test binary re-executed as a process that speaks the
// handshake itself with raw system calls and then misbehaves, against a
// listener in the test process (shm.Listen and its own Receive, Send, Wait
// loop). The listener must survive, stay responsive and keep serving a
// well-behaved peer.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

const (
	hostileEnv     = "ERPC_SHM_HOSTILE_SOCKET"
	hostileModeEnv = "ERPC_SHM_HOSTILE_MODE"
)

// say reports to the test process, one line.
func say(format string, args ...any) { fmt.Fprintf(os.Stdout, format+"\n", args...) }

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// rawPeer is the hostile side of one connection.
type rawPeer struct {
	sock      int
	memfd     int    // ours, kept open, to misbehave with
	mem       []byte // ours, writable: header and the ring we produce
	peerMemfd int    // the listener's, kept open, to misbehave with
	peerMem   []byte // the listener's, read-only
	ring      int
	addr      netip.AddrPort
	bellRecv  int // our bell, which we may never read
	bellSend  int // the socket we passed to the listener (our copy)
	peerBell  int // the listener's bell socket
	out       producer
	in        consumer
}

type rawOpts struct {
	seals  int              // seals on the memfd (FUTURE_WRITE once mapped); -1: a memfd that cannot be sealed
	bell   int              // descriptor passed as our bell; -1: a proper socket
	before func(p *rawPeer) // runs once the memory is mapped, before the hello
	claim  netip.AddrPort   // the address we claim; zero: a client address of ours
	path   string           // a listening socket we claim, appended to the hello
}

var errRefused = errors.New("refused")

// rawConnect connects a SOCK_SEQPACKET socket to path.
func rawConnect(path string) (int, error) {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	tv := unix.Timeval{Sec: 10}
	unix.SetsockoptTimeval(s, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(s)
		return -1, err
	}
	return s, nil
}

// rawRead reads a listener message: its status, and the descriptors.
func rawRead(s int) (status uint64, fds []int, err error) {
	b := make([]byte, 128)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := unix.Recvmsg(s, b, oob, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", errRefused, err)
	}
	if n == 0 {
		return 0, nil, fmt.Errorf("%w: end of file", errRefused)
	}
	cms, _ := unix.ParseSocketControlMessage(oob[:oobn])
	for _, cm := range cms {
		f, _ := unix.ParseUnixRights(&cm)
		fds = append(fds, f...)
	}
	if n != helloSize || binary.LittleEndian.Uint64(b) != memMagic {
		return 0, fds, fmt.Errorf("%w: a %d-byte message", errRefused, n)
	}
	return binary.LittleEndian.Uint64(b[8:]), fds, nil
}

func statusText(st uint64) string {
	switch st {
	case statusOK:
		return "ok"
	case statusFull:
		return "full"
	case statusDuplicate:
		return "duplicate"
	}
	return fmt.Sprintf("status %d", st)
}

// rawBell makes a bell: a bound datagram socket and one connected to it.
func rawBell() (recv, send int, err error) {
	if recv, err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
		return -1, -1, err
	}
	if err = unix.Bind(recv, &unix.SockaddrUnix{}); err != nil {
		return -1, -1, err
	}
	sa, err := unix.Getsockname(recv)
	if err != nil {
		return -1, -1, err
	}
	if send, err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
		return -1, -1, err
	}
	return recv, send, unix.Connect(send, sa)
}

// rawDial runs the connector's side of the handshake by hand. It returns
// the listener's answer ("ok", "full", ...), or "refused" and the error if
// the listener hung up.
func rawDial(path string, ring int, o rawOpts) (*rawPeer, string, error) {
	s, err := rawConnect(path)
	if err != nil {
		return nil, "", err
	}
	p := &rawPeer{sock: s, ring: ring, addr: o.claim, memfd: -1, peerMemfd: -1, bellRecv: -1, bellSend: -1, peerBell: -1}
	if !p.addr.IsValid() {
		p.addr = clientAddr()
	}
	st, fds, err := rawRead(s)
	closeAll(fds)
	if err != nil {
		unix.Close(s)
		return nil, "refused", err
	}
	if st != statusOK {
		unix.Close(s)
		return nil, statusText(st), nil
	}
	size := pageSize + ring
	flags := unix.MFD_CLOEXEC
	if o.seals >= 0 {
		flags |= unix.MFD_ALLOW_SEALING
	}
	if p.memfd, err = unix.MemfdCreate("hostile", flags); err != nil {
		return nil, "", err
	}
	if err := unix.Ftruncate(p.memfd, int64(size)); err != nil {
		return nil, "", err
	}
	if seals := o.seals &^ unix.F_SEAL_FUTURE_WRITE; o.seals > 0 && seals != 0 {
		if _, err := unix.FcntlInt(uintptr(p.memfd), unix.F_ADD_SEALS, seals); err != nil {
			return nil, "", err
		}
	}
	if p.mem, err = unix.Mmap(p.memfd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return nil, "", err
	}
	if o.seals > 0 && o.seals&unix.F_SEAL_FUTURE_WRITE != 0 {
		if _, err := unix.FcntlInt(uintptr(p.memfd), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE); err != nil {
			return nil, "", err
		}
	}
	binary.LittleEndian.PutUint64(p.mem[hdrMagic:], memMagic)
	binary.LittleEndian.PutUint64(p.mem[hdrRing:], uint64(ring))
	bell := o.bell
	if bell < 0 {
		if p.bellRecv, p.bellSend, err = rawBell(); err != nil {
			return nil, "", err
		}
		bell = p.bellSend
	}
	if o.before != nil {
		o.before(p)
	}
	hello := make([]byte, helloSize)
	binary.LittleEndian.PutUint64(hello, memMagic)
	binary.LittleEndian.PutUint64(hello[8:], uint64(ring))
	putAddr(hello[16:], p.addr)
	hello = append(hello, o.path...)
	if err := unix.Sendmsg(s, hello, unix.UnixRights(p.memfd, bell), nil, 0); err != nil {
		return nil, "", err
	}
	st, fds, err = rawRead(s)
	if err != nil || st != statusOK || len(fds) != 2 {
		closeAll(fds)
		unix.Close(s) // p.mem stays mapped: a goroutine of before may write it
		switch {
		case err != nil:
			return nil, "refused", err
		case st == statusOK:
			return nil, "ok", fmt.Errorf("%d descriptors with the reply", len(fds))
		}
		return nil, statusText(st), nil
	}
	p.peerBell, p.peerMemfd = fds[0], fds[1]
	var st2 unix.Stat_t // the listener's ring may be larger than ours (its RingSize)
	if err := unix.Fstat(p.peerMemfd, &st2); err != nil {
		return nil, "ok", err
	}
	peerSize := int(st2.Size)
	if p.peerMem, err = unix.Mmap(p.peerMemfd, 0, peerSize, unix.PROT_READ, unix.MAP_SHARED); err != nil {
		return nil, "ok", fmt.Errorf("mapping the listener's memory: %w", err)
	}
	p.out = newProducer(atomicU64(p.peerMem, hdrHead), p.mem[pageSize:size:size])
	p.in = newConsumer(atomicU64(p.mem, hdrHead), p.peerMem[pageSize:peerSize:peerSize])
	return p, "ok", nil
}

// ringListener rings the listener if it sleeps.
func (p *rawPeer) ringListener() {
	if atomicU64(p.peerMem, hdrSleep).Load() != 0 {
		unix.Sendto(p.peerBell, []byte{1}, unix.MSG_DONTWAIT, nil)
	}
}

// ping sends a datagram to the listener, ringing it if it sleeps, and
// waits up to 5 s for one back.
func (p *rawPeer) ping() bool {
	if !p.out.put([]byte("ping"), nil) {
		return false
	}
	p.ringListener()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Microsecond) {
		if !p.in.pending() {
			continue
		}
		n := 0
		for _, ok := p.in.next(); ok; _, ok = p.in.next() {
			n++
		}
		return p.in.end() == nil && n > 0
	}
	return false
}

// waitEOF reads the socket until the listener closes it.
func (p *rawPeer) waitEOF(d time.Duration) bool {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	unix.SetsockoptTimeval(p.sock, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	var b [64]byte
	for {
		n, err := unix.Read(p.sock, b[:])
		if n == 0 && err == nil || err == unix.ECONNRESET {
			return true
		}
		if err != nil && err != unix.EINTR {
			return false
		}
	}
}

// TestHostilePeerHelper is the hostile peer: the test binary re-executed by
// startHostile with hostileEnv set. It reports what it did and saw on
// stdout, one line at a time.
func TestHostilePeerHelper(t *testing.T) {
	path := os.Getenv(hostileEnv)
	if path == "" {
		t.Skip("runs only as the hostile peer process")
	}
	mode, arg, _ := strings.Cut(os.Getenv(hostileModeEnv), ":")
	n, _ := strconv.Atoi(arg)
	sealed := rawOpts{seals: sealsNeeded, bell: -1}
	var keep []*rawPeer // connections stay open until the process ends
	switch mode {
	case "shrink":
		// The memfd carries the seals the listener asks for (and not
		// F_SEAL_SEAL); then we try to shrink it under the listener.
		p, st, err := rawDial(path, minRingSize, sealed)
		say("HANDSHAKE %s %s", st, errText(err))
		if p == nil {
			return
		}
		keep = append(keep, p)
		say("FTRUNCATE %s", errText(unix.Ftruncate(p.memfd, 0)))
		say("ECHO %v", p.ping())

	case "unsealed":
		// Memfds whose size we could change later, or holes punch in:
		// one that cannot be sealed at all, one sealed against growing
		// only, one against resizing but not against writes.
		for _, o := range []rawOpts{{seals: -1, bell: -1}, {seals: unix.F_SEAL_GROW, bell: -1}, {seals: unix.F_SEAL_SHRINK | unix.F_SEAL_GROW, bell: -1}} {
			p, st, err := rawDial(path, minRingSize, o)
			say("HANDSHAKE %s %s", st, errText(err))
			if p != nil {
				keep = append(keep, p)
				say("FTRUNCATE %s", errText(unix.Ftruncate(p.memfd, 0)))
			}
		}

	case "flipring":
		// The ring size word of the header flips between the size of
		// the hello and a huge one, from before the hello until after
		// a round trip.
		for i := range n {
			var stop atomic.Bool
			var wg sync.WaitGroup
			o := sealed
			o.before = func(p *rawPeer) {
				w := atomicU64(p.mem, hdrRing)
				wg.Go(func() {
					for !stop.Load() {
						w.Store(1 << 40)
						w.Store(uint64(p.ring))
					}
				})
			}
			p, st, err := rawDial(path, minRingSize, o)
			echo := p != nil && p.ping()
			stop.Store(true)
			wg.Wait()
			say("HANDSHAKE %d %s %s ECHO %v", i, st, errText(err), echo)
			if p != nil {
				unix.Close(p.sock)
				unix.Munmap(p.mem)
			}
		}

	case "counters":
		// The head word the listener's producer reads, unaligned and
		// near the end of the area before the hello (the listener's
		// position must not come from it); after a round trip, a record
		// stamped at the listener's position with a kind it must refuse.
		o := sealed
		o.before = func(p *rawPeer) {
			atomicU64(p.mem, hdrHead).Store(uint64(p.ring) - 3)
		}
		p, st, err := rawDial(path, minRingSize, o)
		say("HANDSHAKE %s %s", st, errText(err))
		if p == nil {
			return
		}
		keep = append(keep, p)
		say("ECHO %v", p.ping())
		off := p.out.pos & p.out.mask
		binary.LittleEndian.PutUint32(p.out.data[off+8:], 1)
		binary.LittleEndian.PutUint32(p.out.data[off+12:], 77)
		stampAt(p.out.data, off).Store(p.out.pos + 1)
		unix.Sendto(p.peerBell, []byte{1}, unix.MSG_DONTWAIT, nil)
		say("DROPPED %v", p.waitEOF(5*time.Second))

	case "badbells":
		// Descriptors that are not unix datagram sockets as our bell:
		// writes to them could block, or go anywhere.
		var pp [2]int
		unix.Pipe2(pp[:], unix.O_CLOEXEC|unix.O_NONBLOCK)
		for {
			if _, err := unix.Write(pp[1], make([]byte, 4096)); err != nil {
				break // the pipe is full
			}
		}
		unix.SetNonblock(pp[1], false)
		efd, _ := unix.Eventfd(0, unix.EFD_CLOEXEC)
		udp, _ := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		seq, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		for _, b := range []struct {
			name string
			fd   int
		}{{"pipe", pp[1]}, {"eventfd", efd}, {"udp", udp}, {"seqpacket", seq}} {
			o := sealed
			o.bell = b.fd
			p, st, err := rawDial(path, minRingSize, o)
			say("HANDSHAKE %s %s %s", b.name, st, errText(err))
			if p != nil {
				keep = append(keep, p)
			}
		}

	case "blockbell":
		// A real datagram socket as our bell, but its queue full, never
		// read, the shared file description blocking and no send
		// timeout; and our sleeping word always set, so the listener
		// rings on every datagram it sends us.
		p, st, err := rawDial(path, minRingSize, sealed)
		say("HANDSHAKE %s %s", st, errText(err))
		if p == nil {
			return
		}
		// p stays open: the loop at the end of this case never returns.
		unix.SetNonblock(p.bellSend, true)
		k := 0
		for ; unix.Sendto(p.bellSend, []byte{1}, 0, nil) == nil; k++ {
		}
		unix.SetNonblock(p.bellSend, false)
		unix.SetsockoptTimeval(p.bellSend, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &unix.Timeval{})
		say("FILLED %d", k)
		say("ADDR %v", p.addr)
		w := atomicU64(p.mem, hdrSleep)
		for i := uint64(1); ; i++ {
			w.Store(i) // a new epoch again and again: the listener rings each
		}

	case "clearsleep":
		// The listener's sleeping word of our connection cleared, again
		// and again: it lies in the listener's memory, which we may map
		// only read-only; and our own word, cleared as well.
		p, st, err := rawDial(path, minRingSize, sealed)
		say("HANDSHAKE %s %s", st, errText(err))
		if p == nil {
			return
		}
		keep = append(keep, p)
		_, err = unix.Mmap(p.peerMemfd, 0, pageSize+p.ring, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		say("MAPWRITE %s", errText(err))
		say("MPROTECT %s", errText(unix.Mprotect(p.peerMem, unix.PROT_READ|unix.PROT_WRITE)))
		w := atomicU64(p.mem, hdrSleep)
		go func() {
			for {
				w.Store(0)
			}
		}()
		say("CLEARING")

	case "many":
		// n complete handshakes, kept open.
		for i := range n {
			p, st, err := rawDial(path, minRingSize, sealed)
			say("CONN %d %s %s", i, st, errText(err))
			if p != nil {
				keep = append(keep, p)
			}
		}

	case "halfopen":
		// n connections that read the greeting and send nothing more.
		var wg sync.WaitGroup
		for i := range n {
			s, err := rawConnect(path)
			if err != nil {
				say("CONN %d %v", i, err)
				continue
			}
			st, _, err := rawRead(s)
			say("CONN %d %s %s", i, statusText(st), errText(err))
			if err != nil || st != statusOK {
				continue
			}
			start := time.Now()
			wg.Go(func() {
				p := &rawPeer{sock: s}
				ok := p.waitEOF(30 * time.Second)
				say("CLOSED %d %v %d", i, ok, time.Since(start).Milliseconds())
			})
		}
		wg.Wait()

	default:
		say("MODE %q unknown", mode)
	}
	time.Sleep(time.Minute) // until the test kills us
	runtime.KeepAlive(keep)
}

// hostile is a running hostile peer process.
type hostile struct {
	cmd   *exec.Cmd
	lines chan string
}

func startHostile(t *testing.T, path, mode string) *hostile {
	t.Helper()
	return startHelperProcess(t, "TestHostilePeerHelper", hostileEnv+"="+path, hostileModeEnv+"="+mode)
}

// startHelperProcess runs the test binary as another process, running the
// test named run only, with env added to its environment.
func startHelperProcess(t *testing.T, run string, env ...string) *hostile {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &hostile{cmd: cmd, lines: make(chan string, 1000)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(h.kill)
	return h
}

func (h *hostile) kill() {
	h.cmd.Process.Kill()
	h.cmd.Wait()
}

// expect returns the peer's next line, which must start with prefix.
func (h *hostile) expect(t *testing.T, prefix string) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			t.Fatalf("the hostile peer exited before saying %q", prefix)
		}
		if !strings.HasPrefix(l, prefix) {
			t.Fatalf("the hostile peer said %q, want %q...", l, prefix)
		}
		t.Logf("hostile peer: %s", l)
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("the hostile peer did not say %q within 30 s", prefix)
	}
	return ""
}

// hostileListener opens a listening transport on a fresh socket path.
func hostileListener(t *testing.T, opts Options) (*Transport, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "erpcshm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "l.sock")
	tr, err := Listen(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, path
}

// serveEcho runs the listener's loop until the test ends: every datagram
// goes back to its sender.
func serveEcho(t *testing.T, tr *Transport) {
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		msg := []transport.Message{{}}
		for !stop.Load() {
			n, _ := tr.Receive(func(from netip.AddrPort, data []byte) {
				msg[0].To, msg[0].Head = from, data
				tr.Send(msg)
			})
			if n == 0 {
				tr.Wait(time.Now().Add(50 * time.Millisecond))
			}
			tr.GonePeers(nil)
		}
	}()
	t.Cleanup(func() {
		stop.Store(true)
		tr.Wake()
		<-done
	})
}

// echo sends a datagram from a well-behaved peer (a transport of this
// process) to the listener at path and waits for it to come back.
func echo(path string) error {
	cli, err := Listen("", Options{})
	if err != nil {
		return err
	}
	defer cli.Close()
	to, err := cli.Resolve(path)
	if err != nil {
		return err
	}
	if err := cli.Send([]transport.Message{{To: to, Head: []byte("hello")}}); err != nil {
		return err
	}
	got := false
	for end := time.Now().Add(5 * time.Second); !got && time.Now().Before(end); {
		if n, _ := cli.Receive(func(netip.AddrPort, []byte) { got = true }); n == 0 {
			cli.Wait(time.Now().Add(10 * time.Millisecond))
		}
	}
	if !got {
		return errors.New("no echo within 5 s")
	}
	return nil
}

func checkEcho(t *testing.T, path string) {
	t.Helper()
	if err := echo(path); err != nil {
		t.Fatalf("well-behaved peer: %v", err)
	}
}

// TestHostileShrink: a peer that shrinks the rings' memfd under the
// listener (which then faulted with SIGBUS on its next look at the ring).
// The listener takes only memfds sealed against resizing, so the
// ftruncate fails in the peer, and an unsealed memfd is refused in the
// handshake.
func TestHostileShrink(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	serveEcho(t, tr)
	h := startHostile(t, path, "shrink")
	h.expect(t, "HANDSHAKE ok")
	if l := h.expect(t, "FTRUNCATE"); l != "FTRUNCATE "+unix.EPERM.Error() {
		t.Fatalf("ftruncate of the sealed memfd: %q, want EPERM", l)
	}
	h.expect(t, "ECHO true") // the connection still works
	checkEcho(t, path)

	h = startHostile(t, path, "unsealed")
	for range 3 {
		h.expect(t, "HANDSHAKE refused") // the listener hung up
	}
	checkEcho(t, path)
	waitConns(t, tr, 1) // the first hostile peer's
}

// TestHostileRingSizeFlip: a peer that flips the ring size word of the
// shared header while the listener handshakes (which then read it twice
// and sliced the rings out of bounds).
func TestHostileRingSizeFlip(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	serveEcho(t, tr)
	const n = 50
	h := startHostile(t, path, "flipring:"+strconv.Itoa(n))
	ok := 0
	for i := range n {
		// The listener reads the word once: seeing the huge size, it
		// refuses the handshake; seeing the right one, it never reads
		// it again, and the connection works while the word flips.
		switch l := h.expect(t, fmt.Sprintf("HANDSHAKE %d ", i)); {
		case strings.HasSuffix(l, " ok ok ECHO true"):
			ok++
		case !strings.Contains(l, " refused refused: "):
			t.Fatalf("handshake %d: %q", i, l)
		}
	}
	t.Logf("%d of %d handshakes accepted", ok, n)
	if ok == 0 {
		t.Fatal("no handshake accepted: the word did not flip as meant")
	}
	checkEcho(t, path)
}

// TestHostileRingCounters: a peer that sets the ring counters to unaligned
// values before the handshake (the listener took them as its own positions
// and wrote a record header across the end of the ring), then to a tail
// beyond the ring: the listener drops that connection.
func TestHostileRingCounters(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	serveEcho(t, tr)
	h := startHostile(t, path, "counters")
	h.expect(t, "HANDSHAKE ok")
	h.expect(t, "ECHO true")
	h.expect(t, "DROPPED true")
	if n := tr.Stats().Corrupt; n != 1 {
		t.Fatalf("%d corrupt rings counted, want 1", n)
	}
	checkEcho(t, path)
}

// TestHostileBadBell: bells that are not unix datagram sockets (a full
// blocking pipe, which the listener wrote to from its loop and blocked
// on; an eventfd; a UDP socket; a unix stream of packets) are refused in
// the handshake.
func TestHostileBadBell(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	serveEcho(t, tr)
	h := startHostile(t, path, "badbells")
	for _, name := range []string{"pipe", "eventfd", "udp", "seqpacket"} {
		h.expect(t, "HANDSHAKE "+name+" refused")
	}
	checkEcho(t, path)
	waitConns(t, tr, 0)
}

// TestHostileBlockingBell: a peer whose bell socket would block (queue
// full and never read, the file description set blocking, no send
// timeout) and whose sleeping word is always set. Sends to it ring it
// each time, and must neither block nor slow down; Close returns at once.
func TestHostileBlockingBell(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	h := startHostile(t, path, "blockbell")
	h.expect(t, "HANDSHAKE ok")
	h.expect(t, "FILLED")
	peer, err := netip.ParseAddrPort(strings.TrimPrefix(h.expect(t, "ADDR "), "ADDR "))
	if err != nil {
		t.Fatal(err)
	}
	const sends = 1000
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		msg := []transport.Message{{To: peer, Head: []byte("x")}}
		for range sends {
			tr.Send(msg)
		}
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		t.Logf("%d sends in %v", sends, d)
		if d > 100*time.Millisecond {
			t.Fatalf("%d sends to the peer took %v", sends, d)
		}
	case <-time.After(5 * time.Second):
		h.kill() // lets the send go on, so that the test can end
		t.Fatal("Send blocked on the peer's bell")
	}
	if got := tr.Stats().Dropped; got != 0 {
		t.Fatalf("%d datagrams dropped", got)
	}
	start := time.Now()
	closed := make(chan struct{})
	go func() { tr.Close(); close(closed) }()
	select {
	case <-closed:
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Fatalf("Close took %v", d)
		}
	case <-time.After(5 * time.Second):
		h.kill()
		t.Fatal("Close blocked")
	}
}

// TestHostileSleepingWord: a peer that keeps clearing the listener's
// sleeping word (which all peers shared, so nobody rang the listener and
// it slept until its deadline) delays nobody's wake-ups but its own. The
// listener's word of a connection now lies in the listener's memory,
// which the peer cannot map writable: it can clear only its own.
func TestHostileSleepingWord(t *testing.T) {
	l, path := hostileListener(t, Options{})
	h := startHostile(t, path, "clearsleep")
	h.expect(t, "HANDSHAKE ok")
	for _, what := range []string{"MAPWRITE ", "MPROTECT "} {
		if l := h.expect(t, what); l != what+unix.EACCES.Error() && l != what+unix.EPERM.Error() {
			t.Fatalf("the peer's writable view of the listener's memory: %q, want refused", l)
		}
	}
	h.expect(t, "CLEARING")
	cli, err := Listen("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	to, err := cli.Resolve(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Wait(time.Now()) // the wake-up of the new connection
	var worst time.Duration
	for range 20 {
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			time.Sleep(2 * time.Millisecond)
			cli.Send([]transport.Message{{To: to, Head: []byte("x")}})
		}()
		start := time.Now()
		l.Wait(time.Now().Add(time.Second))
		worst = max(worst, time.Since(start))
		<-sent
		for got := 0; got == 0; {
			got, _ = l.Receive(func(netip.AddrPort, []byte) {})
		}
	}
	t.Logf("slowest wake-up: %v", worst)
	if worst > 200*time.Millisecond {
		t.Fatalf("a wake-up took %v", worst)
	}
}

// waitConns waits until tr counts n connections and handshakes against
// MaxPeers (the closed connections of well-behaved peers are released by
// the loop a moment after they close).
func waitConns(t *testing.T, tr *Transport, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr.mu.Lock()
		k := len(tr.conns) + tr.accepting
		tr.mu.Unlock()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections and handshakes, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// shortHandshakes makes handshakes time out after d for this test.
func shortHandshakes(t *testing.T, d time.Duration) {
	old := handshakeTimeout
	handshakeTimeout = d
	t.Cleanup(func() { handshakeTimeout = old })
}

// TestMaxPeers: connections beyond Options.MaxPeers are refused with
// "full" at once, and the dialer's Resolve says so (ErrFull); a connection
// that closes makes room again.
func TestMaxPeers(t *testing.T) {
	tr, path := hostileListener(t, Options{MaxPeers: 3})
	serveEcho(t, tr)
	h := startHostile(t, path, "many:5")
	for i := range 5 {
		want := "ok"
		if i >= 3 {
			want = "full"
		}
		h.expect(t, fmt.Sprintf("CONN %d %s", i, want))
	}
	if err := echo(path); !errors.Is(err, ErrFull) {
		t.Fatalf("dial beyond MaxPeers: %v, want ErrFull", err)
	}
	if p := tr.Stats().Peers; p != 3 {
		t.Fatalf("%d peers, want 3", p)
	}
	h.kill()
	waitConns(t, tr, 0) // the loop released them (GonePeers)
	checkEcho(t, path)
}

// TestHalfOpenHandshake: connections that never send their hello count
// against MaxPeers while they last, and are closed after the handshake
// timeout.
func TestHalfOpenHandshake(t *testing.T) {
	const timeout = 500 * time.Millisecond
	shortHandshakes(t, timeout)
	tr, path := hostileListener(t, Options{MaxPeers: 2})
	serveEcho(t, tr)
	h := startHostile(t, path, "halfopen:3")
	h.expect(t, "CONN 0 ok")
	h.expect(t, "CONN 1 ok")
	h.expect(t, "CONN 2 full")
	if err := echo(path); !errors.Is(err, ErrFull) {
		t.Fatalf("dial with 2 handshakes pending: %v, want ErrFull", err)
	}
	for range 2 {
		f := strings.Fields(h.expect(t, "CLOSED"))
		ms, _ := strconv.Atoi(f[3])
		if f[2] != "true" || time.Duration(ms)*time.Millisecond > timeout+time.Second {
			t.Fatalf("half-open connection closed %v (%s ms after the greeting)", f[2], f[3])
		}
	}
	waitConns(t, tr, 0)
	checkEcho(t, path)
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
