package shm

import (
	"net/netip"
	"unsafe"

	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// TestStaleRing: a peer may load our sleeping word set by one Wait and
// ring only after we consumed its record and slept again. That ring finds
// nothing to read, and the peer has rung for that sleep: a Wait that slept
// on after it must still be rung for the next record. Wait returns on
// every ring, and the loop's next Wait sets a new epoch, which the peer
// rings again.
func TestStaleRing(t *testing.T) {
	x, y, to := internalPair(t)
	toY := x.snap.Load().byAddr[to] // x's connection to y
	var yc *conn                    // y's connection to x
	for yc == nil {
		if cs := y.snap.Load().conns; len(cs) == 1 {
			yc = cs[0]
		}
	}

	// y's loop: Wait, Receive, until a datagram came.
	got := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		for {
			y.Wait(start.Add(5 * time.Second))
			if n, _ := y.Receive(func(netip.AddrPort, []byte) {}); n > 0 {
				got <- time.Since(start)
				return
			}
			if time.Since(start) > 5*time.Second {
				got <- time.Since(start)
				return
			}
		}
	}()
	asleep := func(what string) {
		t.Helper()
		deadline := time.Now().Add(time.Second)
		for !(y.waiting.Load() && yc.sleeping.Load() != 0) {
			if time.Now().After(deadline) {
				t.Fatalf("y does not sleep with its word set %s", what)
			}
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(10 * time.Millisecond) // parked on its bell
	}
	asleep("at first")
	// The stale ring: ringPeer's ring, with nothing published.
	epoch := toY.peerSleeping.Load()
	if epoch == 0 {
		t.Fatal("y's word is not set")
	}
	toY.ringPeer()
	if toY.rung != epoch {
		t.Fatalf("x rang epoch %d, y sleeps in %d", toY.rung, epoch)
	}
	asleep("after a stale ring") // the loop's next Wait set a new epoch
	if e := toY.peerSleeping.Load(); e == epoch {
		t.Fatalf("y sleeps again in epoch %d", e)
	}
	if err := x.Send([]transport.Message{{To: to, Head: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if d := <-got; d > time.Second {
		t.Fatalf("the datagram after a stale ring was received after %v", d)
	}
}

// TestMmsghdr: mmsghdr has the size of C's struct mmsghdr.
func TestMmsghdr(t *testing.T) {
	align := unsafe.Alignof(unix.Msghdr{})
	if got, want := unsafe.Sizeof(mmsghdr{}), (unix.SizeofMsghdr+4+align-1)&^(align-1); got != want {
		t.Fatalf("mmsghdr is %d bytes, want %d", got, want)
	}
}

// TestWaitDrainsBell: a woken Wait reads every datagram pending on its
// bell, so that the next Wait sleeps.
func TestWaitDrainsBell(t *testing.T) {
	tr, err := Listen("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for range 20 { // beyond the queue's 10 (net.unix.max_dgram_qlen): EAGAIN
		ring(tr.selfBell)
	}
	start := time.Now()
	tr.Wait(start.Add(time.Second))
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("Wait with rings pending took %v", d)
	}
	start = time.Now()
	tr.Wait(start.Add(50 * time.Millisecond))
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("Wait returned after %v: rings were left on the bell", d)
	}
}
