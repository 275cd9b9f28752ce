//go:build linux

package xdp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestReviewAllocsAtRefresh (promise 5, "the steady state allocates
// nothing"): a steady exchange with one peer re-reads the peer's MAC every
// 30 s (two netlink dumps). The test stands in for the 30 s by expiring
// the cache entry before each exchange (the state the transport is in once
// 30 s have passed), then counts allocations of one exchange, as
// TestAllocs does: a long-running steady state allocates at each refresh.
func TestReviewAllocsAtRefresh(t *testing.T) {
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
	}
	exchange()
	steady := testing.AllocsPerRun(100, exchange)
	refresh := testing.AllocsPerRun(100, func() {
		e := a.neigh[b.LocalAddr().Addr()]
		e.refresh = time.Now() // what 30 s of steady state leads to
		a.neigh[b.LocalAddr().Addr()] = e
		exchange()
	})
	t.Logf("allocations per exchange: %.0f steady, %.0f when the MAC is re-read (every 30 s)", steady, refresh)
	if refresh != 0 {
		t.Errorf("%.0f allocations per MAC refresh in the steady state (netlink dumps)", refresh)
	}
}
