//go:build linux

package network

import (
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/testbed"
)

// TestFairness: Jain's index, the receiver's bins into windows, and which
// senders count in a window.
func TestFairness(t *testing.T) {
	if j := jain([]float64{1, 1, 1, 1}); j != 1 {
		t.Errorf("equal shares: %v", j)
	}
	if j := jain([]float64{1, 0, 0, 0}); math.Abs(j-0.25) > 1e-9 {
		t.Errorf("one of four: %v", j)
	}
	t0 := time.Unix(100, 0)
	a, b := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	nb := testbed.Bins{EpochNS: t0.UnixNano() - 2e6, BinNS: 1e6, By: map[string][]uint64{
		// 2 ms before t0, then 30 ms: a sends 100 per ms throughout; b
		// 100 per ms for 10 ms, then 300.
		a.String(): append(make([]uint64, 2), repeat(100, 30)...),
		b.String(): append(append(make([]uint64, 2), repeat(100, 10)...), repeat(300, 20)...),
	}}
	w := windows(nb, t0, []netip.Addr{a, b}, 3)
	if w[0][0] != 1000 || w[0][2] != 1000 || w[1][0] != 1000 || w[1][1] != 3000 {
		t.Fatalf("windows: %v", w)
	}
	// b finished at 25 ms: only windows 0 and 1 have both senders.
	js := fairness(w, []time.Duration{30 * time.Millisecond, 25 * time.Millisecond})
	if len(js) != 2 || js[0] != 1 || math.Abs(js[1]-jain([]float64{1000, 3000})) > 1e-9 {
		t.Errorf("fairness: %v", js)
	}
}

func repeat(v uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
