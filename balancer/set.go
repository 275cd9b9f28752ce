package balancer

import (
	"math/rand/v2"
	"slices"
	"time"
)

// replicaSet is one immutable snapshot of the replicas a balancer may
// pick, built by Update and swapped in atomically, so that Pick reads it
// without a lock.
type replicaSet struct {
	replicas []*Replica
	// cum holds the cumulative weights (cum[i] = weights of 0..i); nil
	// when all weights are equal, where a uniform draw is enough.
	cum   []uint64
	total uint64
}

func weightOf(r *Replica) uint64 {
	if r.Weight == 0 {
		return 1
	}
	return uint64(r.Weight)
}

func newReplicaSet(ready []*Replica) *replicaSet {
	s := &replicaSet{replicas: ready}
	uniform := true
	for _, r := range ready {
		s.total += weightOf(r)
		if weightOf(r) != weightOf(ready[0]) {
			uniform = false
		}
	}
	if !uniform {
		s.cum = make([]uint64, len(ready))
		var sum uint64
		for i, r := range ready {
			sum += weightOf(r)
			s.cum[i] = sum
		}
	}
	return s
}

// randomIndex draws a replica's index with probability proportional to
// its weight.
func (s *replicaSet) randomIndex() int {
	if s.cum == nil {
		return rand.IntN(len(s.replicas))
	}
	i, _ := slices.BinarySearch(s.cum, rand.Uint64N(s.total)+1)
	return i
}

// twoDistinct draws two different indexes (len >= 2): the first with
// probability proportional to its weight, the second likewise among the
// others, drawn in the weight mass left once the first is taken out, so
// the pair's law is exact whatever the weights (a redraw-then-neighbour
// fallback made the replica listed after a heavy one its near-only
// partner).
func (s *replicaSet) twoDistinct() (int, int) {
	n := len(s.replicas)
	i := s.randomIndex()
	if s.cum == nil {
		j := rand.IntN(n - 1)
		if j >= i {
			j++
		}
		return i, j
	}
	lo := s.cum[i] - weightOf(s.replicas[i]) // mass before replica i
	x := rand.Uint64N(s.total - weightOf(s.replicas[i]))
	if x >= lo {
		x += weightOf(s.replicas[i]) // skip replica i's own range
	}
	j, _ := slices.BinarySearch(s.cum, x+1)
	return i, j
}

// observe records a call's end in r's latency average. A call that never
// ran says nothing of r's speed; a failed call counts as at least twice
// r's current average, so a replica that fails fast does not look fast
// and draw more calls.
func observe(r *Replica, d DoneInfo) {
	if lat, ok := sampleOf(r, d); ok {
		r.State.ObserveLatency(lat)
	}
}

// sampleOf is the latency sample d gives r's average, and false when it
// gives none (the call never ran, or the clock stepped back).
func sampleOf(r *Replica, d DoneInfo) (time.Duration, bool) {
	if d.NeverRan {
		return 0, false
	}
	lat := d.Latency
	if d.Err != nil { // Latency() is capped, so 2× it cannot overflow
		lat = max(lat, 2*r.State.Latency())
	}
	return lat, lat >= 0
}
