package balancer

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// budgetBuckets is how many buckets a retry budget's window is cut into:
// the window slides a bucket (a tenth of it) at a time.
const budgetBuckets = 10

// A bucket word packs the bucket's period tag in its high tagBits and its
// count in the low countBits, so that a bucket is moved on to a new period
// and counted in one compare-and-swap. The tag is the period modulo
// tagModulus, a multiple of budgetBuckets: two periods of one window never
// share a slot, and a tag repeats only every tagModulus periods (1361
// years of 1 s buckets). Counts saturate at 2^28-1 per bucket.
const (
	countBits  = 28
	countMask  = 1<<countBits - 1
	tagModulus = budgetBuckets << 32 // < 2^(64-countBits)
)

// RetryBudgetConfig tunes a RetryBudget; zero fields take the defaults,
// and so do NaN or infinite ones.
type RetryBudgetConfig struct {
	// Ratio is the retries allowed per call deposited (default 0.1).
	Ratio float64
	// MinPerSecond is a floor of retries a second allowed whatever the
	// traffic (default 10; negative for none), so a client with few calls
	// can still retry.
	MinPerSecond float64
	// Window is how far back calls and retries count (default 10 s).
	Window time.Duration
}

// RetryBudget bounds retries to a fraction of calls, as Finagle's retry
// budget does: over the last Window (to within a tenth of it, the window
// sliding bucket by bucket), retries granted never exceed
// Ratio × calls deposited + MinPerSecond × Window in seconds. A retry storm
// thus adds at most about Ratio to the load on an already failing fleet.
// Deposit, once per call (not per retry), is on every call's path: it is
// lock-free and does not allocate. Withdraw, once per retry wanted, takes a
// mutex so that concurrent retries cannot overdraw together.
//
// Buckets are counted from the first time the budget is given, with
// time.Time.Sub, so a wall-clock step does not move them when the times
// carry a monotonic reading (time.Now's do). A Withdraw whose time reads
// less than a window before the latest one seen (a caller that read the
// clock, then waited for the mutex) counts at the latest one; a reading
// further back (a fake clock reset) starts afresh from it.
type RetryBudget struct {
	ratio  float64
	floor  float64 // retries allowed per window whatever the calls
	bucket int64   // ns per bucket
	// base is the first time seen, moved back to a bucket boundary (of
	// the wall clock, keeping the monotonic reading): period 0 starts
	// there.
	base     atomic.Pointer[time.Time]
	deposits [budgetBuckets]atomic.Uint64
	mu       sync.Mutex
	retries  [budgetBuckets]uint64 // same packing; under mu
	latest   int64                 // newest period Withdraw saw; under mu
	seen     bool                  // latest is set; under mu
}

// NewRetryBudget returns a budget with cfg's settings.
func NewRetryBudget(cfg RetryBudgetConfig) *RetryBudget {
	if !(cfg.Ratio > 0) || math.IsInf(cfg.Ratio, 0) { // also NaN
		cfg.Ratio = 0.1
	}
	switch {
	case math.IsNaN(cfg.MinPerSecond) || math.IsInf(cfg.MinPerSecond, 0) || cfg.MinPerSecond == 0:
		cfg.MinPerSecond = 10
	case cfg.MinPerSecond < 0:
		cfg.MinPerSecond = 0
	}
	if cfg.Window < budgetBuckets {
		cfg.Window = 10 * time.Second
	}
	return &RetryBudget{
		ratio:  cfg.Ratio,
		floor:  cfg.MinPerSecond * cfg.Window.Seconds(),
		bucket: int64(cfg.Window) / budgetBuckets,
	}
}

// period is the number of the bucket-long period now falls in, counted
// from the budget's base (negative before it).
func (b *RetryBudget) period(now time.Time) int64 {
	base := b.base.Load()
	if base == nil {
		bucket := time.Duration(b.bucket)
		start := now.Add(-now.Sub(now.Truncate(bucket))) // keeps the monotonic reading
		b.base.CompareAndSwap(nil, &start)
		base = b.base.Load()
	}
	d := int64(now.Sub(*base)) // saturates rather than wraps
	p := d / b.bucket
	if d%b.bucket < 0 {
		p-- // floor, not truncation, before the base
	}
	return p
}

// tagOf is period p's tag: p modulo tagModulus, in [0, tagModulus).
func tagOf(p int64) uint64 {
	t := p % tagModulus
	if t < 0 {
		t += tagModulus
	}
	return uint64(t)
}

// Deposit counts one call.
func (b *RetryBudget) Deposit(now time.Time) {
	tag := tagOf(b.period(now))
	w := &b.deposits[tag%budgetBuckets]
	for {
		old := w.Load()
		next := tag<<countBits | 1
		if old>>countBits == tag {
			if old&countMask == countMask {
				return // saturated
			}
			next = old + 1
		}
		if w.CompareAndSwap(old, next) {
			return
		}
	}
}

// Withdraw reports whether one retry may go now, and if so counts it.
func (b *RetryBudget) Withdraw(now time.Time) bool {
	p := b.period(now)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen && p < b.latest && b.latest-p < budgetBuckets {
		p = b.latest // a stale reading: count it at the latest
	}
	b.latest, b.seen = p, true
	tag := tagOf(p)
	var calls, retries uint64
	for i := range budgetBuckets {
		calls += inWindow(b.deposits[i].Load(), tag)
		retries += inWindow(b.retries[i], tag)
	}
	w := &b.retries[tag%budgetBuckets]
	if float64(retries+1) > b.ratio*float64(calls)+b.floor || *w == tag<<countBits|countMask {
		return false // over budget, or the bucket cannot count another
	}
	if *w>>countBits == tag {
		*w++
	} else {
		*w = tag<<countBits | 1
	}
	return true
}

// inWindow is a bucket word's count if its period is among the window's
// budgetBuckets periods ending at the one tagged tag, else 0.
func inWindow(word, tag uint64) uint64 {
	if (tag+tagModulus-word>>countBits)%tagModulus < budgetBuckets {
		return word & countMask
	}
	return 0
}
