package erpc

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/balancer"
)

// connectLimiter bounds a Client's dials per second: a token bucket
// holding at most a tenth of a second's worth (and at least one).
type connectLimiter struct {
	mu     sync.Mutex
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
}

func (l *connectLimiter) init(perSecond float64, now time.Time) {
	l.rate = perSecond
	l.burst = max(1, perSecond/10)
	l.tokens = l.burst
	l.last = now
}

// take spends a token if there is one; else it says when there will be.
func (l *connectLimiter) take(now time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := now.Sub(l.last); d > 0 {
		l.tokens = min(l.burst, l.tokens+d.Seconds()*l.rate)
		l.last = now
	}
	if l.tokens >= 1 {
		l.tokens--
		return now, true
	}
	return now.Add(time.Duration((1 - l.tokens) / l.rate * float64(time.Second))), false
}

// retryBudget lets retries of calls that may have run add at most a tenth
// to the calls made: each call earns a tenth of a retry, each retry spends
// one, and at most budgetCap retries are banked (and are, at the start).
// Counted in thousandths, lock-free.
type retryBudget struct{ milli atomic.Int64 }

const (
	budgetPerCall = 100  // a tenth of a retry
	budgetRetry   = 1000 // one retry
	budgetCap     = 10 * budgetRetry
)

func (b *retryBudget) init() { b.milli.Store(budgetCap) }

// earn credits one call.
func (b *retryBudget) earn() {
	if b.milli.Load() < budgetCap {
		if b.milli.Add(budgetPerCall) > budgetCap {
			b.milli.Store(budgetCap) // a race may lose a tenth: harmless
		}
	}
}

// spend takes one retry, if the budget has one.
func (b *retryBudget) spend() bool {
	for {
		m := b.milli.Load()
		if m < budgetRetry {
			return false
		}
		if b.milli.CompareAndSwap(m, m-budgetRetry) {
			return true
		}
	}
}

// retryDelay is the pause before retry n (1, 2, ...) of a call that may
// have run: 10 ms doubling, jittered ±50 %, at most 1 s.
func retryDelay(n int) time.Duration {
	d := min(10*time.Millisecond<<min(n-1, 10), time.Second)
	return d/2 + rand.N(d)
}

// defaultBalancer is the balancer of a Client made without WithBalancer.
func defaultBalancer() balancer.Balancer { return &rotor{} }

// rotor places calls in turn over the ready replicas: the stand-in
// default until the balancer package's own land.
type rotor struct {
	ready atomic.Pointer[[]*balancer.Replica]
	n     atomic.Uint64
}

func (b *rotor) Update(ready []*balancer.Replica) { b.ready.Store(&ready) }

func (b *rotor) Pick(balancer.PickInfo) *balancer.Replica {
	p := b.ready.Load()
	if p == nil || len(*p) == 0 {
		return nil
	}
	return (*p)[b.n.Add(1)%uint64(len(*p))]
}

func (b *rotor) Done(*balancer.Replica, balancer.DoneInfo) {}
