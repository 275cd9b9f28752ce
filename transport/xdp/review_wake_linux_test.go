//go:build linux

package xdp

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// efdReadable reports whether the transport's eventfd holds a Wake that
// no Wait has consumed, without consuming it: then the next Wait returns
// at once.
func efdReadable(t testing.TB, x *Transport) bool {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(x.efd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	if err != nil {
		t.Fatalf("poll of the eventfd: %v", err)
	}
	return n == 1
}

// TestReviewWakeLost: the transport interface says "Wake makes a current
// or next Wait return", and Wake may be called from any goroutine. Wait
// clears the woken flag and then reads the eventfd; a Wake that lands
// between the two sets the flag and writes, and the read swallows that
// write: the flag then says "written" while the eventfd is empty, so
// every later Wake returns without writing and no Wait is ever woken
// again (until Close). Here one goroutine Waits in a loop while others
// Wake it, in bounded rounds; after each round the wakers stop, a last
// Wake is made, and the eventfd must then be readable (the next Wait
// returns at once). The check is of state, not of time.
func TestReviewWakeLost(t *testing.T) {
	p := newVethPair(t)
	x := listenXDP(t, p, p.A, p.AddrA, Options{})
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two Ps for the race")
	}
	bound := time.Now().Add(20 * time.Second)
	for round := 0; round < 200 && time.Now().Before(bound); round++ {
		var stop atomic.Bool
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for !stop.Load() {
					x.Wake()
				}
			})
		}
		for range 2000 {
			if err := x.Wait(time.Now().Add(time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
		stop.Store(true)
		wg.Wait()
		// Settle: a Wait consumes any pending write (the flag is then
		// clear), then one Wake from a quiet transport.
		x.Wait(time.Now().Add(time.Millisecond))
		x.Wake()
		if !efdReadable(t, x) {
			flag := x.woken.Load()
			// Show what that means for a sleeping loop.
			start := time.Now()
			x.Wait(time.Now().Add(500 * time.Millisecond))
			slept := time.Since(start).Round(time.Millisecond)
			x.Wake()
			t.Fatalf("round %d: after Wake the eventfd is empty and the woken flag is %v: the Wake is lost; a Wait right after "+
				"it slept %v, to its deadline; one more Wake then left the eventfd readable: %v (every later Wake is lost too)",
				round, flag, slept, efdReadable(t, x))
		}
	}
}

// TestReviewWakeAfterClose: Wake may be called from any goroutine, so a
// Wake may come after Close (a poster racing the endpoint's close). Close
// closes the eventfd, and its number is soon reused by the next file the
// process opens; Wake then writes its 8 bytes into that file. Here Close
// is followed by pipes until one gets the eventfd's old number, then
// Wake: the pipe must stay empty.
func TestReviewWakeAfterClose(t *testing.T) {
	p := newVethPair(t)
	x := listenXDP(t, p, p.A, p.AddrA, Options{})
	efd := x.efd
	x.Close()
	var victim [2]int
	var extra [][2]int
	defer func() {
		for _, pp := range extra {
			unix.Close(pp[0])
			unix.Close(pp[1])
		}
	}()
	found := false
	for range 64 {
		var pp [2]int
		if err := unix.Pipe2(pp[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
			t.Fatal(err)
		}
		extra = append(extra, pp)
		if pp[1] == efd {
			victim, found = pp, true
			break
		}
	}
	if !found {
		t.Skipf("no pipe got the eventfd's number %d", efd)
	}
	x.Wake()
	var b [16]byte
	n, err := unix.Read(victim[0], b[:])
	if n > 0 {
		t.Fatalf("Wake after Close wrote %d bytes (%x) into an unrelated pipe that reused the eventfd's number %d", n, b[:n], efd)
	}
	t.Logf("pipe stayed empty: %v", err)
}
