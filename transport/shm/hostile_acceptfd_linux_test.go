//go:build linux

package shm

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHostileAcceptLoopReleasesPeerDescriptor: a connector beyond MaxPeers
// is refused by the accept loop itself, which closes the socket: the last
// reference to the listener's end, whose queue holds whatever the
// connector sent before the greeting, descriptors included. A socket
// holding a lingering TCP socket (lingeringBell), sent right after
// connecting, is then released in the accept loop's thread, which waits
// out the linger (30 s here): no connector is accepted meanwhile, every
// honest Resolve times out, and Close waits for the loop. (The connector
// closes its copy right after sending, a race with the listener's close
// that it need win once in 20 tries.)
//
// Where the kernel has SO_PASSRIGHTS the listening socket refuses
// descriptors until the greeting (the connectors' sends fail); the test
// runs also without it, as on an older kernel, where the refused sockets
// go to the closer.
func TestHostileAcceptLoopReleasesPeerDescriptor(t *testing.T) {
	withAndWithoutPassRights(t, "closer", acceptLoopReleasesPeerDescriptor)
}

func acceptLoopReleasesPeerDescriptor(t *testing.T) {
	const timeout = 500 * time.Millisecond
	shortHandshakes(t, timeout)
	tr, path := hostileListener(t, Options{MaxPeers: 1})
	serveEcho(t, tr)
	holder, err := rawConnect(path) // holds the one place: a handshake, until its deadline
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(holder)
	time.Sleep(50 * time.Millisecond)
	for range 20 {
		x := lingeringBell(t)
		go func() {
			s, err := rawConnect(path)
			if err != nil {
				return
			}
			unix.Sendmsg(s, []byte{0}, unix.UnixRights(x), nil, 0)
			unix.Close(x)
			unix.Close(s)
		}()
	}
	time.Sleep(timeout + 500*time.Millisecond) // the holder's handshake is dropped
	if err := echo(path); err != nil {
		t.Errorf("an honest peer cannot connect %v after the refused connectors: %v", timeout+500*time.Millisecond, err)
	}
	done := make(chan struct{})
	go func() { tr.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Error("Close did not return within 2 s")
	}
}

// withAndWithoutPassRights runs fn with SO_PASSRIGHTS used where the
// kernel has it, and again without, as on an older kernel (the subtest
// named without).
func withAndWithoutPassRights(t *testing.T, without string, fn func(*testing.T)) {
	for _, passRights := range []bool{true, false} {
		t.Run(map[bool]string{true: "SO_PASSRIGHTS", false: without}[passRights], func(t *testing.T) {
			old := useSoPassRights
			useSoPassRights = passRights
			defer func() { useSoPassRights = old }()
			fn(t)
		})
	}
}
