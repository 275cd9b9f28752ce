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

	// P2C's: the count of its picks when it last picked this replica, and
	// whether the next sample restarts the latency average (set when the
	// replica is picked after sitting out long enough that its average is
	// stale; see P2C).
	lastPick       atomic.Uint64
	restartPending atomic.Bool
	// restartFrom is the PickInfo.Start (Unix ns) of the retry that set
	// restartPending: only a call begun then or since restarts the
	// average, not a straggler of the slow spell.
	restartFrom atomic.Int64

	// order is a process-unique number given the first time a Hash
	// balancer sees the replica (0 before): the stable tie-break between
	// replicas that share an Addr.
	order atomic.Uint64
}

// replicaOrders numbers replicas in the order Hash balancers first see
// them.
var replicaOrders atomic.Uint64

// ensureOrder gives s its order number if it has none.
func (s *ReplicaStats) ensureOrder() {
	if s.order.Load() == 0 {
		s.order.CompareAndSwap(0, replicaOrders.Add(1))
	}
}

// ewmaWeight is the weight of a new sample. 0.2 follows a change within
// about ten calls yet damps one slow call.
const ewmaWeight = 0.2

// maxLatency caps a latency sample and the average: a call whose start
// was never stamped (MaxInt64) must not overflow the average or its
// conversion back to a Duration; a day is "very slow" for any balancer.
const maxLatency = 24 * time.Hour

// ObserveLatency folds one call's latency into the average. A negative
// latency (the clock stepped back during the call) says nothing of the
// replica's speed and is ignored; samples over maxLatency (a day) count as
// a day.
func (s *ReplicaStats) ObserveLatency(d time.Duration) {
	if d < 0 {
		return
	}
	x := float64(min(d, maxLatency))
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

// Latency is the current average (0 before any sample), in [0, 24 h].
func (s *ReplicaStats) Latency() time.Duration {
	x := math.Float64frombits(s.ewma.Load())
	if !(x > 0) { // 0, or a value that cannot come from ObserveLatency
		return 0
	}
	return time.Duration(min(x, float64(maxLatency)))
}

// Samples is how many latencies the average holds (since it was reset).
func (s *ReplicaStats) Samples() uint64 { return s.samples.Load() }

// restartLatency replaces the average by one sample, clamped as in
// ObserveLatency (a negative one is ignored): P2C's, for a replica back
// from a long idle spell, whose old average says little of it now.
func (s *ReplicaStats) restartLatency(d time.Duration) {
	if d < 0 {
		return
	}
	s.ewma.Store(math.Float64bits(float64(min(d, maxLatency))))
	s.samples.Add(1)
}

// resetLatency forgets the average: a replica back from ejection is
// judged on fresh calls, not on the spell that got it ejected.
func (s *ReplicaStats) resetLatency() {
	s.ewma.Store(0)
	s.samples.Store(0)
}
