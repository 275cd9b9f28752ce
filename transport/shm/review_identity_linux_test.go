//go:build linux

package shm

import (
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
	p, st, err := rawDial(pathL, minRingSize, rawOpts{seals: unix.F_SEAL_SHRINK | unix.F_SEAL_GROW, bell: -1, claim: claim, path: squat})
	say("HANDSHAKE %s %s", st, errText(err))
	if p == nil {
		return
	}
	unix.Close(ln)
	os.Remove(squat)
	say("RELEASED")
	p.out.put([]byte("inject"), nil)
	if atomicU32(p.mem, hdrSleep1).CompareAndSwap(1, 0) {
		unix.Sendto(p.peerBell, []byte{1}, unix.MSG_DONTWAIT, nil)
	}
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
func TestHostileStaleListenerClaim(t *testing.T) {
	l, pathL := hostileListener(t, Options{})
	pathV := filepath.Join(filepath.Dir(pathL), "v.sock")
	h := startHelperProcess(t, "TestStaleListenerHelper", staleEnv+"="+pathL+"|"+pathV)
	h.expect(t, "HANDSHAKE ok")
	h.expect(t, "RELEASED")

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

	// The victim connects to the listener on its own.
	if to, err := victim.Resolve(pathL); err != nil {
		t.Errorf("the victim cannot connect to the listener: %v", err)
	} else if err := victim.Send([]transport.Message{{To: to, Head: []byte("honest")}}); err != nil {
		t.Errorf("the victim cannot send: %v", err)
	}
}
