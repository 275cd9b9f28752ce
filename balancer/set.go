package balancer

import (
	"math/rand/v2"
	"slices"
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
	// prior is the latency (ns) assumed for a replica without a sample:
	// the average of those that have one when the set was built, so a new
	// replica costs as much as a typical one and takes load at once.
	prior float64
}

// defaultPrior (1 ms in ns) is the latency assumed when no replica has a
// sample yet; all replicas then share it and compare on calls in flight.
const defaultPrior = 1e6

func weightOf(r *Replica) uint64 {
	if r.Weight == 0 {
		return 1
	}
	return uint64(r.Weight)
}

func newReplicaSet(ready []*Replica) *replicaSet {
	s := &replicaSet{replicas: ready, prior: defaultPrior}
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
	var sum float64
	var sampled int
	for _, r := range ready {
		if l := r.State.Latency(); l > 0 {
			sum += float64(l)
			sampled++
		}
	}
	if sampled > 0 {
		s.prior = sum / float64(sampled)
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

// twoDistinct draws two different indexes by weight (len >= 2). With
// unequal weights it redraws the second a few times and then takes the
// next index, a bias that matters only for a replica holding nearly all
// the weight.
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
	for range 4 {
		if j := s.randomIndex(); j != i {
			return i, j
		}
	}
	return i, (i + 1) % n
}

// observe records a call's end in r's latency average. A call that never
// ran says nothing of r's speed; a failed call counts as at least twice
// r's current average, so a replica that fails fast does not look fast
// and draw more calls.
func observe(r *Replica, d DoneInfo) {
	if d.NeverRan {
		return
	}
	lat := d.Latency
	if d.Err != nil {
		lat = max(lat, 2*r.State.Latency())
	}
	r.State.ObserveLatency(lat)
}
