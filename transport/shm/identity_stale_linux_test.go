//go:build linux

package shm

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

const staleEnv = "ERPC_SHM_STALE_SOCKET" // "listener path|path to squat"

// TestStaleListenerHelper is a process that listens, for a moment, on a
// socket path that is free (the path a victim server uses, between two
// runs of it), connects to the listener claiming that path's address,
// which the kernel then vouches for, and gives the path up. It sends
// "inject" and reports every datagram it gets, as "GOT <data>".
func TestStaleListenerHelper(t *testing.T) {
	pathL, squat, _ := strings.Cut(os.Getenv(staleEnv), "|")
	if pathL == "" {
		t.Skip("runs only as the squatting process")
	}
	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		if err = unix.Bind(ln, &unix.SockaddrUnix{Name: squat}); err == nil {
			err = unix.Listen(ln, 16)
		}
	}
	if err != nil {
		say("LISTEN %v", err)
		return
	}
	claim, _ := listenerAddr(squat)
	p, st, err := rawDial(pathL, minRingSize, rawOpts{seals: sealsNeeded, bell: -1, claim: claim, path: squat})
	say("HANDSHAKE %s %s", st, errText(err))
	if p == nil {
		return
	}
	unix.Close(ln)
	os.Remove(squat)
	say("RELEASED")
	p.out.put([]byte("inject"), nil)
	p.ringListener()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
		if !p.in.pending() {
			continue
		}
		for d, ok := p.in.next(); ok; d, ok = p.in.next() {
			say("GOT %s", d)
		}
		p.in.end()
	}
}

// TestHostileStaleListenerClaim: the kernel vouches for a listener address
// only at the moment of the handshake, and the listener keeps it for the
// life of the connection. A process that once listened on a path (a victim
// server's, while the victim was down) keeps that path's address after it
// gives the path up; when the victim listens there again:
//   - the listener resolves the path, reaches the victim, and yet what it
//     sends to the victim's address goes to the squatter;
//   - the squatter's datagrams arrive from the victim's address;
//   - the victim itself cannot connect (its claim, vouched for by the
//     kernel, is a "duplicate").
//
// The listener watches the directory of the path and takes the address
// from the squatter when it gives the path up: as soon as its watcher
// goroutine reads the event, so the victim comes up after that (it comes
// up at any later time; the wait is bounded).
func TestHostileStaleListenerClaim(t *testing.T) {
	l, pathL := hostileListener(t, Options{})
	pathV := filepath.Join(filepath.Dir(pathL), "v.sock")
	h := startHelperProcess(t, "TestStaleListenerHelper", staleEnv+"="+pathL+"|"+pathV)
	h.expect(t, "HANDSHAKE ok")
	h.expect(t, "RELEASED")
	for end := time.Now().Add(5 * time.Second); l.Stats().Revoked == 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}

	victim, err := Listen(pathV, Options{}) // the victim server comes (back) up on its path
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	loop := startRecordingLoop(t, l)
	select {
	case r := <-loop.in:
		if r.from == victim.LocalAddr() {
			t.Errorf("another process's %q arrived from the victim's address %v", r.data, r.from)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the squatter's datagram did not arrive")
	}

	// The listener dials the victim's path: the kernel connects it to the
	// victim.
	to, err := l.Resolve(pathV)
	if err != nil {
		t.Fatalf("resolve the victim: %v", err)
	}
	if to != victim.LocalAddr() {
		t.Fatalf("the victim resolved as %v, want %v", to, victim.LocalAddr())
	}
	loop.send(to, "secret")
	r, ok := receiveOne(victim)
	if !ok || r.data != "secret" {
		t.Errorf("the victim did not get what the listener sent to its address (%v %q)", ok, r.data)
	}
	select {
	case line := <-h.lines:
		t.Errorf("the squatter received what the listener sent to the victim: %q", line)
	case <-time.After(time.Second):
	}

	if n := l.Stats().Revoked; n != 1 {
		t.Errorf("Stats.Revoked %d, want 1 (the squatter's address)", n)
	}

	// The victim connects to the listener on its own.
	if to, err := victim.Resolve(pathL); err != nil {
		t.Errorf("the victim cannot connect to the listener: %v", err)
	} else if err := victim.Send([]transport.Message{{To: to, Head: []byte("honest")}}); err != nil {
		t.Errorf("the victim cannot send: %v", err)
	}
}

// fakeListenerConn registers with tr a connection known by the listener
// address a, whose process the kernel said was pid when it was made (a pid
// not ours: another process that listened at a's path then). Its socket's
// other end is returned, to close.
func fakeListenerConn(t *testing.T, tr *Transport, a netip.AddrPort, pid int32) (*conn, error) {
	return fakeClaimedConn(t, tr, a, pid, "")
}

// fakeClaimedConn is fakeListenerConn for a connection whose address was
// taken from a claim of the socket at claimed ("": none), whose directory
// is then watched.
func fakeClaimedConn(t *testing.T, tr *Transport, a netip.AddrPort, pid int32, claimed string) (*conn, error) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "fake")
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[1]) })
	var mems [2][]byte
	for i := range mems {
		if mems[i], err = unix.Mmap(-1, 0, pageSize+minRingSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS); err != nil {
			t.Fatal(err)
		}
	}
	c := newConn(a, fc.(*net.UnixConn), mems[0], mems[1], minRingSize, minRingSize, -1)
	c.listenPid = pid
	if claimed != "" {
		if _, err := claimedDirs.add(tr, claimed); err != nil {
			t.Fatal(err)
		}
		c.claimedPath, c.claimedUid = claimed, uint32(os.Getuid())
	}
	if err := tr.register(c, false); err != nil {
		tr.unwatch(c)
		c.sock.Close()
		c.unmap(&tr.closer)
		return nil, err
	}
	return c, nil
}

// TestListenerAddressRecheckedOnConflict: a connection known by a listener
// address, made when another process (a pid not ours) listened at the
// path, loses the address when it is contested: by Resolve of the path
// (the kernel says this process listens there now, or nobody does), and
// by a new connection whose process the kernel just saw listening there.
// A connection whose process is the one listening cannot be displaced: a
// second connection of the same process is a duplicate.
func TestListenerAddressRecheckedOnConflict(t *testing.T) {
	l, pathL := hostileListener(t, Options{})
	dir := filepath.Dir(pathL)
	stale := int32(1 << 22) // no process of ours: pid_max is at most 1<<22
	revoked := uint64(0)
	lost := func(c *conn, what string) {
		t.Helper()
		revoked++
		if kind, _, _ := addrKind(c.peer()); kind != kindAssigned {
			t.Fatalf("%s: the stale connection is still known as %v", what, c.peer())
		}
		if n := l.Stats().Revoked; n != revoked {
			t.Fatalf("%s: Stats.Revoked %d, want %d", what, n, revoked)
		}
	}

	// Resolve of a path where this process listens now.
	pathV := filepath.Join(dir, "v.sock")
	v, err := Listen(pathV, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	old, err := fakeListenerConn(t, l, v.LocalAddr(), stale)
	if err != nil {
		t.Fatal(err)
	}
	l.remember(pathV, v.LocalAddr())
	if a, err := l.Resolve(pathV); err != nil || a != v.LocalAddr() {
		t.Fatalf("Resolve: %v %v", a, err)
	}
	lost(old, "Resolve")
	if c := l.snap.Load().byAddr[v.LocalAddr()]; c == nil || c == old || c.listenPid != int32(os.Getpid()) {
		t.Fatalf("the listener address does not lead to the listening process")
	}
	loop := startRecordingLoop(t, l)
	loop.send(v.LocalAddr(), "to the listening one")
	if r, ok := receiveOne(v); !ok || r.data != "to the listening one" {
		t.Fatalf("the listening process did not get what was sent to its address: %v %q", ok, r.data)
	}

	// Resolve of a path where nobody listens.
	pathN := filepath.Join(dir, "n.sock")
	addrN, _ := listenerAddr(pathN)
	old, err = fakeListenerConn(t, l, addrN, stale)
	if err != nil {
		t.Fatal(err)
	}
	l.remember(pathN, addrN)
	if a, err := l.Resolve(pathN); err != nil || a != addrN {
		t.Fatalf("Resolve of a path nobody listens at: %v %v", a, err)
	}
	lost(old, "Resolve where nobody listens")

	// A new connection known by the same address, whose process the
	// kernel saw listening: it takes the address; one of the same process
	// as the open connection is a duplicate.
	addrW, _ := listenerAddr(filepath.Join(dir, "w.sock"))
	old, err = fakeListenerConn(t, l, addrW, stale)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fakeListenerConn(t, l, addrW, stale); err != errDuplicate {
		t.Fatalf("a second connection of the listening process: %v, want errDuplicate", err)
	}
	if n := l.Stats().Revoked; n != revoked {
		t.Fatalf("a duplicate revoked an address: Stats.Revoked %d, want %d", n, revoked)
	}
	newer, err := fakeListenerConn(t, l, addrW, stale-1)
	if err != nil {
		t.Fatalf("the process listening now cannot connect: %v", err)
	}
	lost(old, "a newer connection")
	if c := l.snap.Load().byAddr[addrW]; c != newer {
		t.Fatal("the address does not lead to the newer connection")
	}
}

// TestClaimedAddressRechecked: a connection whose listener address was
// taken from a claim loses it when the claimed socket's name changes in
// its directory (here a file created there: the socket that was checked
// is not at the path any more), at once, without a probe; and when a
// probe (after lost events) finds nobody listening there. A probe that
// finds the connection's own process listening keeps it.
func TestClaimedAddressRechecked(t *testing.T) {
	l, pathL := hostileListener(t, Options{})
	dir := filepath.Dir(pathL)
	stale := int32(1 << 22) // no process of ours
	waitKind := func(c *conn, want byte, what string) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if kind, _, _ := addrKind(c.peer()); kind == want {
				return
			}
		}
		t.Fatalf("%s: the connection is known as %v", what, c.peer())
	}

	// Listening before the directory is watched: the creation of v.sock,
	// read by the watcher after kept is registered, would revoke kept at
	// once (a race that failed 5 runs in 15 under -race).
	pathV := filepath.Join(dir, "v.sock")
	v, err := Listen(pathV, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()

	pathA := filepath.Join(dir, "a.sock")
	addrA, _ := listenerAddr(pathA)
	a, err := fakeClaimedConn(t, l, addrA, stale, pathA)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pathA, nil, 0o600); err != nil { // the name changes
		t.Fatal(err)
	}
	waitKind(a, kindAssigned, "the claimed name changed")

	pathB := filepath.Join(dir, "b.sock")
	addrB, _ := listenerAddr(pathB)
	b, err := fakeClaimedConn(t, l, addrB, stale, pathB)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := fakeClaimedConn(t, l, v.LocalAddr(), int32(os.Getpid()), pathV)
	if err != nil {
		t.Fatal(err)
	}
	l.recheckDir(dir, "", true) // as after lost events: probe them all
	waitKind(b, kindAssigned, "a probe found nobody listening")
	time.Sleep(100 * time.Millisecond)
	if kind, _, _ := addrKind(kept.peer()); kind != kindListener {
		t.Fatalf("the connection of the process listening at its path lost its address: %v", kept.peer())
	}
	if n := l.Stats().Revoked; n != 2 {
		t.Fatalf("Stats.Revoked %d, want 2", n)
	}
}
