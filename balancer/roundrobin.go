package balancer

import "sync/atomic"

// maxSchedule bounds a round-robin schedule's length; larger weight sums
// are scaled down to it (each replica keeping at least one slot).
const maxSchedule = 4096

// RoundRobin returns a weighted round-robin balancer. Update lays out one
// cycle of nginx's smooth weighted round robin (each step every replica
// gains its weight, the one with the most credit is taken and pays the
// total), so weights 5,1,1 give a a b a c a a rather than a a a a a b c;
// Pick walks the cycle with one atomic counter: no lock, no allocation.
// Weights are divided by their greatest common divisor, and scaled down
// when they sum to more than 4096 (each replica keeps at least one slot).
// The counter carries on across Updates, so a new cycle starts wherever
// the old one stood rather than at its first replica.
func RoundRobin() Balancer { return &roundRobin{} }

type roundRobin struct {
	cycle atomic.Pointer[[]*Replica]
	next  atomic.Uint64
}

func (b *roundRobin) Update(ready []*Replica) {
	cycle := smoothCycle(ready)
	b.cycle.Store(&cycle)
}

func (b *roundRobin) Pick(PickInfo) *Replica {
	c := b.cycle.Load()
	if c == nil || len(*c) == 0 {
		return nil
	}
	return (*c)[(b.next.Add(1)-1)%uint64(len(*c))]
}

func (b *roundRobin) Done(r *Replica, d DoneInfo) { observe(r, d) }

// smoothCycle is one cycle of smooth weighted round robin over rs.
func smoothCycle(rs []*Replica) []*Replica {
	weights := make([]int64, len(rs))
	var g, total uint64
	for i, r := range rs {
		g = gcd(g, weightOf(r))
		total += weightOf(r)
		weights[i] = int64(weightOf(r))
	}
	var sum int64
	for i := range weights {
		w := uint64(weights[i]) / g
		if total/g > maxSchedule {
			w = max(1, uint64(weights[i])*maxSchedule/total)
		}
		weights[i] = int64(w)
		sum += int64(w)
	}
	credit := make([]int64, len(rs))
	cycle := make([]*Replica, 0, sum)
	for range sum {
		best := 0
		for i, w := range weights {
			credit[i] += w
			if credit[i] > credit[best] {
				best = i
			}
		}
		credit[best] -= sum
		cycle = append(cycle, rs[best])
	}
	return cycle
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
