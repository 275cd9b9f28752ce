//go:build linux

package shm

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lingeringTCP returns a TCP socket whose close(2) blocks for 30 s: it has
// SO_LINGER set and unsent data that its peer (a loopback listener that
// never accepts nor reads) has no window for. The listener closes at the
// end of the test, which resets the connection and ends the wait.
func lingeringTCP(t *testing.T) int {
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.SetsockoptInt(ln, unix.SOL_SOCKET, unix.SO_RCVBUF, 4096)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(ln) })
	sa, _ := unix.Getsockname(ln)
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.SetsockoptInt(c, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096)
	if err := unix.Connect(c, sa); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err := unix.SendmsgN(c, buf, nil, nil, unix.MSG_DONTWAIT); err != nil {
			break // the window and our send buffer are full
		}
	}
	if err := unix.SetsockoptLinger(c, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 30}); err != nil {
		t.Fatal(err)
	}
	return c
}

// lingeringBell returns a unix datagram socket (what checkBell wants of
// a bell) with a lingering TCP socket (lingeringTCP) in flight in its
// receive queue, and no other reference to either: whoever closes the
// bell last frees the queue, and with it the TCP socket, whose release
// (in that thread, on its way back from close(2)) waits for the linger.
func lingeringBell(t *testing.T) int {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	tcp := lingeringTCP(t)
	if err := unix.Sendmsg(sp[0], []byte{1}, unix.UnixRights(tcp), nil, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(tcp)
	unix.Close(sp[0])
	return sp[1]
}

// TestHostileLingeringBell: the listener keeps the bell socket a peer
// passed and closes it when the connection is released: in GonePeers,
// on the endpoint's loop (and in Close). checkBell only asks that it be a
// unix datagram socket, and such a socket can hold descriptors in flight
// in its queue, which its release frees: a TCP socket with SO_LINGER and
// unsent data among them makes the loop's close(2) of the bell wait for
// the linger time (here 30 s; a peer can ask for hours). A peer that
// connects with such a bell and hangs up stalls the listener's loop, for
// every connection, in its GonePeers. (A hostile listener's bell does the
// same to a connector's loop; the memfd slot of a hello, closed in the
// handshake's goroutine, holds a MaxPeers place past the deadline.)
func TestHostileLingeringBell(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	bell := lingeringBell(t)
	p, st, err := rawDial(path, minRingSize, rawOpts{bell: bell, seals: sealsNeeded})
	if p == nil {
		t.Fatalf("hostile handshake: %s %v", st, err)
	}
	unix.Close(bell) // the listener's copy is the last
	waitConns(t, tr, 1)
	unix.Close(p.sock) // hang up: the loop releases the connection
	for end := time.Now().Add(2 * time.Second); tr.Stats().Peers != 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		tr.GonePeers(nil) // the loop's call
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		t.Logf("GonePeers returned in %v", d)
	case <-time.After(2 * time.Second):
		t.Fatal("the loop's GonePeers did not return within 2 s: it closes the peer's bell, whose queue holds a lingering TCP socket")
	}
}

// TestHostileLingeringBellClose: the same bell (see TestHostileLingeringBell)
// on a connection that stays open: Close releases the connection, closes
// the bell, and waits for the linger.
func TestHostileLingeringBellClose(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	bell := lingeringBell(t)
	p, st, err := rawDial(path, minRingSize, rawOpts{bell: bell, seals: sealsNeeded})
	if p == nil {
		t.Fatalf("hostile handshake: %s %v", st, err)
	}
	defer unix.Close(p.sock)
	unix.Close(bell) // the listener's copy is the last
	waitConns(t, tr, 1)
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		tr.Close()
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		t.Logf("Close returned in %v", d)
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not return within 2 s: it closes the peer's bell, whose queue holds a lingering TCP socket")
	}
}
