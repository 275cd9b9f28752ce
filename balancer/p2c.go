package balancer

import (
	"math/rand/v2"
	"sync/atomic"
)

// exploreOneIn: one pick in this many takes the costlier of the two
// replicas drawn. Without it a replica whose average went up (one slow
// spell) would, on an idle fleet, never be picked again and never show
// that it recovered; with it, it gets about 1/exploreOneIn × 2/N of the
// calls, few enough to stay out of the p99, and each refreshes its
// average.
const exploreOneIn = 256

// P2C returns the default balancer: power of two choices. Each pick draws
// two distinct replicas at random, with probability proportional to their
// weight, and takes the one with the lower cost (calls in flight + 1) ×
// latency average. A replica without a latency sample costs the average
// of the others (as they were at the last Update), so a new replica takes
// load at once. Pick and Done take no lock and do not allocate.
func P2C() Balancer { return &p2c{} }

type p2c struct {
	set atomic.Pointer[replicaSet]
}

func (p *p2c) Update(ready []*Replica) { p.set.Store(newReplicaSet(ready)) }

func (p *p2c) Pick(PickInfo) *Replica {
	s := p.set.Load()
	if s == nil || len(s.replicas) == 0 {
		return nil
	}
	if len(s.replicas) == 1 {
		return s.replicas[0]
	}
	i, j := s.twoDistinct()
	cheap, dear := s.replicas[i], s.replicas[j]
	if s.cost(cheap) > s.cost(dear) {
		cheap, dear = dear, cheap
	}
	if rand.Uint32N(exploreOneIn) == 0 {
		return dear
	}
	return cheap
}

// cost is the expected wait for one more call on r.
func (s *replicaSet) cost(r *Replica) float64 {
	lat := float64(r.State.Latency())
	if lat == 0 {
		lat = s.prior
	}
	return float64(r.State.InFlight.Load()+1) * lat
}

func (p *p2c) Done(r *Replica, d DoneInfo) { observe(r, d) }
