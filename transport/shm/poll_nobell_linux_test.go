package shm

import (
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestPollingPeerNoBell: while both ends poll (Poll and Receive, never
// Wait, as busy-polling loops do), a ping-pong of datagrams makes no bell
// write in either direction: the fast path of shared memory is free of
// system calls. Then one end sleeps in Wait and the other sends: the bell
// is written, so the count does see bells (the fault the test guards
// against is counted where it happens).
func TestPollingPeerNoBell(t *testing.T) {
	x, y, toY := internalPair(t)
	for len(y.snap.Load().conns) != 1 {
		time.Sleep(100 * time.Microsecond)
	}
	toX := y.snap.Load().conns[0].peer()

	// exchange polls tr until one datagram came, then takes it.
	poll := func(tr *Transport) bool {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if !tr.Poll(64, func() bool { return false }) {
				continue
			}
			if n, err := tr.Receive(func(netip.AddrPort, []byte) {}); err != nil || n > 0 {
				return err == nil
			}
		}
		return false
	}
	const rounds = 2000
	echoed := make(chan bool, 1)
	go func() { // y: echoes every datagram, polling
		for range rounds {
			if !poll(y) || y.Send([]transport.Message{{To: toX, Head: []byte("pong")}}) != nil {
				echoed <- false
				return
			}
		}
		echoed <- true
	}()
	before := bellWrites.Load()
	for i := range rounds {
		if err := x.Send([]transport.Message{{To: toY, Head: []byte("ping")}}); err != nil {
			t.Fatal(err)
		}
		if !poll(x) {
			t.Fatalf("round %d: no answer", i)
		}
	}
	if !<-echoed {
		t.Fatal("y failed to echo")
	}
	if n := bellWrites.Load() - before; n != 0 {
		t.Fatalf("%d bell writes in %d round trips between polling peers", n, rounds)
	}

	// Now y sleeps (a Wait returns at once for a Wake left pending, by
	// the connection's registration: it waits again until a datagram
	// came): a datagram to it must ring.
	woke := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		for time.Since(start) < 5*time.Second {
			y.Wait(start.Add(5 * time.Second))
			if n, _ := y.Receive(func(netip.AddrPort, []byte) {}); n > 0 {
				break
			}
		}
		woke <- time.Since(start)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !y.waiting.Load() || y.snap.Load().conns[0].sleeping.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("y never slept with its word set")
		}
		time.Sleep(100 * time.Microsecond)
	}
	before = bellWrites.Load()
	if err := x.Send([]transport.Message{{To: toY, Head: []byte("wake")}}); err != nil {
		t.Fatal(err)
	}
	if d := <-woke; d > 4*time.Second {
		t.Fatalf("the sleeping peer woke after %v", d)
	}
	if n := bellWrites.Load() - before; n != 1 {
		t.Fatalf("%d bell writes to wake a sleeping peer, want 1", n)
	}
}
