//go:build linux

package xdp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestAllocs: in steady state Send, Receive, Poll, Wait and Wake allocate
// nothing (a datagram from one AF_XDP transport to another over veth),
// and neither does the kernel socket's read that every kernelCheckEvery-th
// Receive makes (it allocated a sockaddr each time through unix.Recvfrom:
// 0.02-0.03 allocations per call in erpc-bench latency).
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := newVethPair(t)
	a := listenXDP(t, p, p.A, p.AddrA, Options{})
	b := listenXDP(t, p, p.B, p.AddrB, Options{})
	msgs := []transport.Message{{To: b.LocalAddr(), Head: []byte("ping"), Payload: make([]byte, 100)}}
	got := 0
	fn := func(netip.AddrPort, []byte) { got++ }
	exchange := func() {
		if err := a.Send(msgs); err != nil {
			t.Fatal(err)
		}
		for want := got + 1; got < want; {
			b.Wait(time.Now().Add(time.Second))
			b.Receive(fn)
		}
		b.Wake()
		b.Wait(time.Now().Add(time.Second))
		b.Poll(4, func() bool { return false })
	}
	exchange() // resolves the MAC, fills the caches
	if n := testing.AllocsPerRun(300, exchange); n != 0 {
		t.Fatalf("%.2f allocations per exchange, want 0", n)
	}
	// AllocsPerRun rounds down: make each run read the kernel socket
	// once, so that an allocation there counts one per run.
	receives := func() {
		for range kernelCheckEvery {
			b.Receive(fn)
		}
	}
	if n := testing.AllocsPerRun(50, receives); n != 0 {
		t.Fatalf("%.2f allocations per %d Receives (one kernel socket read), want 0", n, kernelCheckEvery)
	}
}
