//go:build linux

package shm

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHostileWatcherReleasesPeerDescriptor: after the handshake the unix
// socket "carries nothing", but a peer can still send on it, with
// descriptors (SCM_RIGHTS). The watcher's Read discards them, which
// releases them in its thread: a socket whose queue holds a lingering
// TCP socket (lingeringBell) makes that release wait for the linger. The
// watcher then never sees the peer hang up: the connection is not
// reported gone (it keeps its place against MaxPeers), and Close waits
// for the watcher. (The peer closes its copy right after sending: a race
// with the watcher's read, which it need win once in 20 tries.)
//
// Where the kernel has SO_PASSRIGHTS the connection socket refuses
// descriptors once the handshake is done (the peer's send fails with
// EPERM); the test runs also without it, as on an older kernel, where the
// watcher drains them into the closer.
func TestHostileWatcherReleasesPeerDescriptor(t *testing.T) {
	withAndWithoutPassRights(t, "drain", watcherReleasesPeerDescriptor)
}

func watcherReleasesPeerDescriptor(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	p, st, err := rawDial(path, minRingSize, rawOpts{bell: -1, seals: sealsNeeded})
	if p == nil {
		t.Fatalf("hostile handshake: %s %v", st, err)
	}
	waitConns(t, tr, 1)
	// Each try sends a fresh one and closes our copy at once (in a
	// goroutine: when the watcher releases its copy first, our close is
	// the last and waits out the linger, until the test ends).
	sent, refused := 0, 0
	for range 20 {
		x := lingeringBell(t)
		switch err := unix.Sendmsg(p.sock, []byte{0}, unix.UnixRights(x), nil, 0); {
		case err == nil:
			sent++
		case err == unix.EPERM && useSoPassRights:
			refused++ // the kernel refuses descriptors on the socket
		default:
			t.Fatal(err)
		}
		go unix.Close(x)
	}
	t.Logf("descriptors sent %d, refused by the kernel %d", sent, refused)
	if !useSoPassRights && sent != 20 {
		t.Fatalf("sent %d of 20 descriptors", sent)
	}
	time.Sleep(100 * time.Millisecond)
	unix.Close(p.sock) // hang up
	for end := time.Now().Add(2 * time.Second); tr.Stats().Peers != 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if n := tr.Stats().Peers; n != 0 {
		t.Errorf("the peer hung up 2 s ago and is still counted open (%d): its watcher is blocked releasing the descriptor the peer sent", n)
	}
	done := make(chan struct{})
	go func() { tr.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Error("Close did not return within 2 s")
	}
}
