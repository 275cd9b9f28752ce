package cc

import (
	"math/rand/v2"
	"testing"
)

// The link-rate estimate against the three kinds of pair samples a path
// sees, with a delivery bound as the path would measure it (tau: the
// link's packet time; n sessions sharing the link).
func TestLinkRateEstimate(t *testing.T) {
	const tau = 100e3
	const bucket = 1e9
	cases := []struct {
		name   string
		sample func(r *rand.Rand) int64 // one pair sample
		dlv    int64                    // the delivery bound: the session's share
		lo, hi float64                  // the estimate must be within [lo, hi] x tau
	}{
		// Shared FIFO: a pair comes out a packet apart, or wider when
		// another sender's packet came between (a quarter), give
		// or take the noise of reading them.
		{"fifo shared by 4", func(r *rand.Rand) int64 {
			g := int64(tau) + r.Int64N(20e3) - 10e3
			if r.IntN(4) == 0 {
				g += int64(1+r.IntN(3)) * tau
			}
			return g
		}, 4 * tau, 0.85, 1.15},
		// Alone on a shaper whose timer fires late: many pairs leave in
		// a clump at the line's pace (1 µs; a quarter: the median holds
		// while they are under half), the others carry the lateness.
		{"clumped shaper alone", func(r *rand.Rand) int64 {
			if r.IntN(4) == 0 {
				return 1000
			}
			return int64(tau) + r.Int64N(5*tau)
		}, tau * 105 / 100, 0.9, 1.1},
		// Alone, read by a client that wakes late: the gaps spread both
		// ways around the packet time.
		{"noisy reads alone", func(r *rand.Rand) int64 {
			return int64(tau) + r.Int64N(0.8*tau) - 0.4*tau
		}, tau, 0.75, 1.25},
	}
	for _, tc := range cases {
		for seed := uint64(1); seed <= 50; seed++ {
			r := rand.New(rand.NewPCG(seed, 1))
			var l linkRate
			now := int64(1e9)
			for range 200 {
				now += 1e6
				l.addPair(tc.sample(r))
			}
			l.dlvMin.add(now, tc.dlv, bucket)
			l.update()
			got := float64(l.est) / tau
			if got < tc.lo || got > tc.hi {
				t.Errorf("%s seed %d: estimate %.2f of the packet time, want [%.2f, %.2f]", tc.name, seed, got, tc.lo, tc.hi)
			}
		}
	}
}

// TestLinkRateDeliveryInterval: a delivery-rate interval opens only on a
// queued acknowledgement read in time, and spans at least deliverAcks
// acknowledgements and deliverSpan; without pair samples the delivery
// rate alone gives no estimate (it may be any share of the link).
func TestLinkRateDeliveryInterval(t *testing.T) {
	var l linkRate
	now := int64(1e9)
	const gap = 1e6 // one acknowledgement per ms: a packet time of 1 ms
	for range 20 {  // never queued: no interval
		now += gap
		l.deliver(now, pktBytes, pktBytes, false, 0, 10e3, 1e9)
	}
	if l.dlvStart != 0 || l.dlvMin.min != 0 {
		t.Fatalf("an interval opened on unqueued acknowledgements")
	}
	now += gap
	l.deliver(now, pktBytes, pktBytes, true, 1e6, 10e3, 1e9) // stalled: no interval either
	if l.dlvStart != 0 {
		t.Fatalf("an interval opened on a stalled acknowledgement")
	}
	for i := range 9 { // opens, then runs 8 ms through unqueued ones
		now += gap
		l.deliver(now, pktBytes, pktBytes, false, int64(b2i(i == 0))*1e6, 10e3, 1e9)
	}
	if l.dlvMin.min != 0 {
		t.Fatalf("a sample after %d acknowledgements", l.dlvAcks)
	}
	for range deliverAcks {
		now += gap
		l.deliver(now, pktBytes, pktBytes, false, 0, 10e3, 1e9)
	}
	if l.dlvMin.min != gap {
		t.Fatalf("delivery sample %d, want %d", l.dlvMin.min, int64(gap))
	}
	if l.est != 0 {
		t.Fatalf("estimate %d from the delivery rate alone", l.est)
	}
	l.addPair(gap / 2) // the only pair, below the bound: taken as it is
	if l.est != gap/2 {
		t.Fatalf("one pair of %d: estimate %d", int64(gap/2), l.est)
	}
	l.addPair(3 * gap)
	l.addPair(3 * gap)
	if l.est != gap {
		t.Fatalf("pairs above the delivery bound: estimate %d, want the bound %d", l.est, int64(gap))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
