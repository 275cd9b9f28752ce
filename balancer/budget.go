package balancer

import (
	"sync"
	"sync/atomic"
	"time"
)

// budgetBuckets is how many buckets a retry budget's window is cut into:
// the window slides a bucket (a tenth of it) at a time.
const budgetBuckets = 10

// RetryBudgetConfig tunes a RetryBudget; zero fields take the defaults.
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
type RetryBudget struct {
	ratio  float64
	floor  float64 // retries allowed per window whatever the calls
	bucket int64   // ns per bucket
	// Each word holds a bucket's number (its start / bucket, low 32 bits)
	// in its high half and its count in the low half, so that a bucket is
	// moved on to a new period and counted in one compare-and-swap.
	deposits [budgetBuckets]atomic.Uint64
	mu       sync.Mutex
	retries  [budgetBuckets]uint64 // same packing; under mu
}

// NewRetryBudget returns a budget with cfg's settings.
func NewRetryBudget(cfg RetryBudgetConfig) *RetryBudget {
	if cfg.Ratio <= 0 {
		cfg.Ratio = 0.1
	}
	if cfg.MinPerSecond < 0 {
		cfg.MinPerSecond = 0
	} else if cfg.MinPerSecond == 0 {
		cfg.MinPerSecond = 10
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

// period is the number of the bucket-long period now falls in.
func (b *RetryBudget) period(now time.Time) uint32 {
	return uint32(now.UnixNano() / b.bucket)
}

// Deposit counts one call.
func (b *RetryBudget) Deposit(now time.Time) {
	p := b.period(now)
	w := &b.deposits[p%budgetBuckets]
	for {
		old := w.Load()
		next := uint64(p)<<32 | 1
		if uint32(old>>32) == p {
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
	var calls, retries uint64
	for i := range budgetBuckets {
		calls += inWindow(b.deposits[i].Load(), p)
		retries += inWindow(b.retries[i], p)
	}
	if float64(retries+1) > b.ratio*float64(calls)+b.floor {
		return false
	}
	w := &b.retries[p%budgetBuckets]
	if uint32(*w>>32) == p {
		*w++
	} else {
		*w = uint64(p)<<32 | 1
	}
	return true
}

// inWindow is a bucket word's count if its period is among the window's
// budgetBuckets periods ending at p, else 0.
func inWindow(word uint64, p uint32) uint64 {
	if p-uint32(word>>32) < budgetBuckets {
		return word & (1<<32 - 1)
	}
	return 0
}
