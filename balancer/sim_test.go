package balancer

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"
)

// newReplicas makes n replicas named r0..r(n-1), weights taken from
// weights in turn (none: weight 1).
func newReplicas(n int, weights ...uint32) []*Replica {
	rs := make([]*Replica, n)
	for i := range rs {
		rs[i] = &Replica{Addr: fmt.Sprintf("10.0.0.%d:7000", i), Weight: 1}
		if len(weights) > 0 {
			rs[i].Weight = weights[i%len(weights)]
		}
	}
	return rs
}

// completion is one call in flight in the simulation.
type completion struct {
	at    time.Duration
	r     *Replica
	start time.Duration
}

type completions []completion

func (c completions) Len() int           { return len(c) }
func (c completions) Less(i, j int) bool { return c[i].at < c[j].at }
func (c completions) Swap(i, j int)      { c[i], c[j] = c[j], c[i] }
func (c *completions) Push(x any)        { *c = append(*c, x.(completion)) }
func (c *completions) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}

// fleetSim drives a balancer with open-loop load on a fake clock: calls
// arrive at exponentially spaced times (mean gap), each replica serves a
// call in service(r) regardless of its load, and the simulation counts
// the calls each replica got and their latencies.
type fleetSim struct {
	b        Balancer
	rnd      *rand.Rand
	gap      time.Duration
	service  func(r *Replica) time.Duration
	now      time.Duration
	inflight completions
	picks    map[*Replica]int
	lats     []time.Duration
}

func newFleetSim(b Balancer, seed uint64, gap time.Duration, service func(*Replica) time.Duration) *fleetSim {
	return &fleetSim{b: b, rnd: rand.New(rand.NewPCG(seed, 1)), gap: gap, service: service, picks: map[*Replica]int{}}
}

// run advances the simulation by d, returning the picks made in it.
func (s *fleetSim) run(d time.Duration) map[*Replica]int {
	picks := map[*Replica]int{}
	end := s.now + d
	for {
		next := s.now + time.Duration(s.rnd.ExpFloat64()*float64(s.gap))
		for len(s.inflight) > 0 && s.inflight[0].at <= min(next, end) {
			c := heap.Pop(&s.inflight).(completion)
			c.r.State.InFlight.Add(-1)
			s.b.Done(c.r, DoneInfo{Latency: c.at - c.start})
			s.lats = append(s.lats, c.at-c.start)
		}
		if next > end {
			s.now = end
			return picks
		}
		s.now = next
		r := s.b.Pick(PickInfo{})
		if r == nil {
			continue
		}
		r.State.InFlight.Add(1)
		picks[r]++
		s.picks[r]++
		heap.Push(&s.inflight, completion{at: s.now + s.service(r), r: r, start: s.now})
	}
}

func share(picks map[*Replica]int, r *Replica) float64 {
	total := 0
	for _, n := range picks {
		total += n
	}
	if total == 0 {
		return 0
	}
	return float64(picks[r]) / float64(total)
}
