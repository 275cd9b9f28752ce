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
// queued ahead of it leave it time to finish within target; otherwise it
// is refused at once (ResourceExhausted, a NACK) and the client can go
// elsewhere, instead of waiting to be late (NEBULA). With meanService 0
// the pool measures its handlers' mean itself (admitting everything until
// it has a first measure). It implies a fixed pool: WithWorkers, or as
// many workers as GOMAXPROCS.
//
// With w workers, mean service time S and target T, the queue holds at
// most w(T-S)/S requests (per worker queue with DispatchHash: (T-S)/S):
// the depth at which the mean request would just finish in time. The
// target is for the tail, though, and service times vary, so the pool
// also watches what it admitted: each request whose time from admission
// to answer passed the target lowers the bound by a sixteenth, each one in
// time raises it by a sixteenth of a ninety-ninth, up to w(T-S)/S; the
// bound settles where about one admitted request in a hundred is late.
// The target is the server's share of the caller's SLO: what the network
// and the caller add comes on top of it.
// The bound is on waiting only: a request that finds a worker free (fewer
// requests admitted and unanswered than workers) is always admitted, even
// with the mean at or above the target, so a slow phase or a slow first
// request never locks the pool out, and the measured mean keeps following
// the handlers.
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
	// scale is the fraction of the mean's bound in force, in millionths,
	// lowered by late answers and raised by timely ones (see WithSLO).
	// Workers update it concurrently; a lost update is one sample lost.
	scale atomic.Int64
}

// The feedback's steps, in millionths of the scale: a late answer takes a
// sixteenth off, a timely one adds a ninety-ninth of that, so that the
// scale holds still when one admitted request in a hundred is late (p99).
const (
	scaleOne  = 1_000_000
	scaleDown = 16             // scale -= scale/scaleDown when late
	scaleUp   = scaleDown * 99 // scale += scale/scaleUp when in time
	scaleMin  = scaleOne / 1000
)

func (a *admission) init(target, mean time.Duration, workers int, perWorker bool) {
	a.target, a.workers, a.fixed = target, workers, mean > 0
	if perWorker {
		a.workers = 1
	}
	a.meanNs.Store(int64(mean))
	a.scale.Store(scaleOne)
}

// maxQueued is the number of waiting requests behind which a new one can
// still meet the target: it waits for about queued/workers services, then
// takes one itself; scaled down by late answers, but never below one while
// the mean allows any queueing (a request may always wait for the next
// free worker).
func (a *admission) maxQueued() int {
	mean := a.meanNs.Load()
	if a.target <= 0 || mean <= 0 {
		return math.MaxInt
	}
	bound := int64(a.workers) * (int64(a.target) - mean) / mean
	if bound <= 0 {
		return 0
	}
	return int(max(1, bound*a.scale.Load()/scaleOne))
}

// ok reports whether a request may join a queue in which queued requests
// wait and inService are admitted and not yet answered. While fewer than
// the queue's workers are in service, one of them is free and takes the
// request at once: it is always admitted, even when the mean leaves no
// room for waiting (target at or below it), so that the pool keeps
// serving and measuring and the bound recovers when the mean drops.
func (a *admission) ok(queued, inService int) bool {
	return inService < a.workers || queued < a.maxQueued()
}

// observe takes a handler's run time and its request's time since
// admission. The run folds into the mean (if measured: an exponentially
// weighted average over about 32 requests); the total, against the
// target, moves the scale.
func (a *admission) observe(run, sojourn time.Duration) {
	if s := a.scale.Load(); sojourn > a.target {
		a.scale.Store(max(scaleMin, s-s/scaleDown))
	} else {
		a.scale.Store(min(scaleOne, s+max(1, s/scaleUp)))
	}
	if a.fixed {
		return
	}
	old := a.meanNs.Load()
	if old == 0 {
		a.meanNs.Store(int64(run))
		return
	}
	a.meanNs.Store(old + (int64(run)-old)/32)
}

// sloQueueCap is the capacity of a queue bounded by WithSLO (unless
// WithQueueDepth says otherwise): a backstop for a target far above the
// service time.
const sloQueueCap = 4096
