package balancer

import (
	"math"
	"sync/atomic"
	"time"
)

// ReplicaStats are the per-replica counters the client keeps and
// balancers read: calls in flight and an exponentially weighted moving
// average of latency. All methods are safe for concurrent use and do not
// allocate.
type ReplicaStats struct {
	InFlight atomic.Int64
	ewma     atomic.Uint64 // float64 bits: latency in nanoseconds; 0 before the first sample
	samples  atomic.Uint64 // samples folded into ewma since it was last reset

	// The outlier detector's: consecutive failures, and the replica's
	// ejection state (an OutlierStatus), read lock-free by Outlier.Status.
	failures atomic.Int64
	status   atomic.Int32
}

// ewmaWeight is the weight of a new sample. 0.2 follows a change within
// about ten calls yet damps one slow call.
const ewmaWeight = 0.2

// ObserveLatency folds one call's latency into the average.
func (s *ReplicaStats) ObserveLatency(d time.Duration) {
	x := float64(d)
	for {
		old := s.ewma.Load()
		cur := math.Float64frombits(old)
		next := x
		if old != 0 {
			next = cur + ewmaWeight*(x-cur)
		}
		if s.ewma.CompareAndSwap(old, math.Float64bits(next)) {
			s.samples.Add(1)
			return
		}
	}
}

// Latency is the current average (0 before any sample).
func (s *ReplicaStats) Latency() time.Duration {
	return time.Duration(math.Float64frombits(s.ewma.Load()))
}

// Samples is how many latencies the average holds (since it was reset).
func (s *ReplicaStats) Samples() uint64 { return s.samples.Load() }

// resetLatency forgets the average: a replica back from ejection is
// judged on fresh calls, not on the spell that got it ejected.
func (s *ReplicaStats) resetLatency() {
	s.ewma.Store(0)
	s.samples.Store(0)
}
