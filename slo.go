package erpc

import (
	"math"
	"sync/atomic"
	"time"
)

// Dispatch says how a fixed worker pool (WithWorkers) shares background
// requests among its workers.
type Dispatch int

const (
	// DispatchShared keeps every waiting request in one queue, and any
	// idle worker takes the oldest: a worker never idles while a request
	// waits, and a long request delays only the one worker running it.
	// This is join-the-bounded-shortest-queue (JBSQ) with a bound of one:
	// a worker holds only the request it runs. (Hardware dispatchers use a
	// bound of two or more to hide the dispatcher's latency to a core; a Go
	// channel has none to hide.)
	DispatchShared Dispatch = iota
	// DispatchHash gives each worker a queue of its own, and sends a
	// session's requests always to the same one, as eRPC and most RPC
	// servers do. A request may then wait behind a long one while another
	// worker idles; it is here as the baseline to measure against.
	DispatchHash
)

func (d Dispatch) String() string {
	switch d {
	case DispatchShared:
		return "shared"
	case DispatchHash:
		return "hash"
	}
	return "Dispatch(?)"
}

// WithDispatch sets how a fixed worker pool shares requests (default
// DispatchShared). It implies a fixed pool: WithWorkers, or as many workers
// as GOMAXPROCS.
func WithDispatch(d Dispatch) Option {
	return func(o *options) { o.dispatch, o.fixedPool = d, true }
}

// WithSLO bounds a fixed worker pool's queue by a latency target instead
// of by count: a background request is admitted only if the requests
// queued ahead of it leave it time to finish within target, judged by the
// mean service time; otherwise it is refused at once (ResourceExhausted, a
// NACK) and the client can go elsewhere, instead of waiting to be late
// (NEBULA). With meanService 0 the pool measures its handlers' mean itself
// (admitting everything until it has a first measure). It implies a fixed
// pool: WithWorkers, or as many workers as GOMAXPROCS.
//
// With w workers, mean service time S and target T, the queue holds at
// most w(T-S)/S requests (per worker queue with DispatchHash: (T-S)/S).
// Inline handlers have no queue of their own and are not bounded by it.
func WithSLO(target, meanService time.Duration) Option {
	return func(o *options) { o.slo, o.sloMean, o.fixedPool = target, meanService, true }
}

// admission decides whether a request may join a queue, given how many
// wait in it already. The zero value admits everything (then only the
// queue's capacity bounds it).
type admission struct {
	target  time.Duration
	workers int // sharing the queue: 1 with DispatchHash
	fixed   bool
	meanNs  atomic.Int64 // the mean service time, given or measured
}

func (a *admission) init(target, mean time.Duration, workers int, perWorker bool) {
	a.target, a.workers, a.fixed = target, workers, mean > 0
	if perWorker {
		a.workers = 1
	}
	a.meanNs.Store(int64(mean))
}

// maxQueued is the number of waiting requests behind which a new one can
// still meet the target: it waits for about queued/workers services, then
// takes one itself.
func (a *admission) maxQueued() int {
	mean := a.meanNs.Load()
	if a.target <= 0 || mean <= 0 {
		return math.MaxInt
	}
	return int(int64(a.workers) * (int64(a.target) - mean) / mean)
}

func (a *admission) ok(queued int) bool { return queued < a.maxQueued() }

// measuring reports whether the pool must time its handlers.
func (a *admission) measuring() bool { return a.target > 0 && !a.fixed }

// observe folds a handler's duration into the mean (an exponentially
// weighted average over about 32 requests). Workers call it concurrently;
// a lost update only delays the average by one sample.
func (a *admission) observe(d time.Duration) {
	old := a.meanNs.Load()
	if old == 0 {
		a.meanNs.Store(int64(d))
		return
	}
	a.meanNs.Store(old + (int64(d)-old)/32)
}

// sloQueueCap is the capacity of a queue bounded by WithSLO (unless
// WithQueueDepth says otherwise): a backstop for a target far above the
// service time.
const sloQueueCap = 4096
