package erpc

import (
	"context"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// workerPool runs background handlers, in one of two ways:
//
//   - elastic (the default): each request runs at once on an idle worker
//     goroutine, or a new one; the number running is bounded only by the
//     engine's bound on held requests, beyond which the engine refuses
//     requests itself. Idle workers exit after a while.
//   - fixed (WithWorkers): n workers take requests from bounded queues; a
//     request that finds its queue full is refused at once. With
//     DispatchShared (the default) there is one queue and any idle worker
//     takes its oldest request (NEBULA's single queue); with DispatchHash
//     each worker has a queue of its own and a session's requests always
//     join the same one (the baseline that single-queue dispatch beats).
//
// WithSLO bounds the queues by the latency target instead of by count.
type workerPool struct {
	ep    *Endpoint
	fixed bool
	q     chan Request   // elastic hand-off, or the shared queue
	qs    []chan Request // DispatchHash: one queue per worker
	admit admission
	busy  atomic.Int32 // handlers running or queued
	// inService counts, per queue, the requests admitted and not yet
	// answered; the loop owns it (enqueue and sendAnswer run there).
	// Fewer than the queue's workers means one of them is free.
	inService []int
	// depth bounds each queue's waiting requests (WithQueueDepth). A
	// queue's channel holds max(depth, its workers): the requests admitted
	// because a worker was free wait there until that worker takes them,
	// and there are never more of those than workers.
	depth   int
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
	gids    sync.Map // goroutine IDs of the workers, for isWorker
}

// workerIdle is how long an elastic worker waits for work before it exits.
const workerIdle = 10 * time.Second

func newWorkerPool(ep *Endpoint, o *options) *workerPool {
	p := &workerPool{ep: ep}
	n := o.workers
	if n <= 0 {
		p.q = make(chan Request) // a hand-off to a waiting worker
		return p
	}
	p.fixed = true
	p.admit.init(o.slo, o.sloMean, n, o.dispatch == DispatchHash)
	if o.dispatch == DispatchHash {
		p.depth = max(1, (o.queue+n-1)/n)
		p.inService = make([]int, n)
		p.qs = make([]chan Request, n)
		for i := range p.qs {
			p.qs[i] = make(chan Request, p.depth)
			p.wg.Go(func() { p.fixedWorker(p.qs[i]) })
		}
		return p
	}
	p.inService = make([]int, 1)
	p.depth = o.queue
	p.q = make(chan Request, max(o.queue, n))
	for range n {
		p.wg.Go(func() { p.fixedWorker(p.q) })
	}
	return p
}

// submit hands q to a worker, or reports false if the pool is full (fixed)
// or stopped. It is called by the loop only.
func (p *workerPool) submit(q Request) bool {
	if p.fixed {
		return p.enqueue(q)
	}
	p.busy.Add(1)
	select {
	case p.q <- q:
		return true
	default:
	}
	if !p.spawn(q) {
		p.busy.Add(-1)
		return false
	}
	return true
}

// enqueue puts q on its queue if the queue has room for it: by count, and
// by the latency target if there is one. A request that finds one of its
// queue's workers free is always admitted, whatever the target says: it
// starts at once, so it waits behind nothing, and its run keeps the
// measured mean up to date (a bound of 0 that refused it would never be
// measured again).
func (p *workerPool) enqueue(q Request) bool {
	ch, i := p.q, 0
	if p.qs != nil {
		i = int(uint32(q.r.h.Session()) % uint32(len(p.qs)))
		ch = p.qs[i]
	}
	free := p.inService[i] < p.admit.workers
	if !free && len(ch) >= p.depth || !p.admit.ok(len(ch), p.inService[i]) {
		return false
	}
	if p.admit.target > 0 {
		q.r.queued = time.Now()
	}
	p.busy.Add(1)
	select {
	case ch <- q:
		p.inService[i]++
		q.r.queue = i + 1
		return true
	default:
		p.busy.Add(-1)
		return false
	}
}

// answered notes that r, which enqueue admitted, has its answer: its
// worker is free for the next request (on the loop).
func (p *workerPool) answered(r *request) {
	if r.queue > 0 {
		p.inService[r.queue-1]--
		r.queue = 0
	}
}

// spawn starts an elastic worker with q as its first request.
func (p *workerPool) spawn(q Request) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return false
	}
	p.wg.Go(func() { p.elasticWorker(q) })
	return true
}

// run runs a background handler, with its method in the goroutine's pprof
// labels (a CPU profile then splits the workers' time by method).
func (p *workerPool) run(q Request, queue chan Request) {
	pprof.SetGoroutineLabels(q.r.handler.labels)
	exit := exitPlan{ep: p.ep, pool: p, queue: queue}
	if p.admit.target > 0 {
		start := time.Now()
		p.ep.runHandler(q, exit)
		end := time.Now()
		p.admit.observe(end.Sub(start), end.Sub(q.r.queued))
	} else {
		p.ep.runHandler(q, exit)
	}
	pprof.SetGoroutineLabels(context.Background())
	q.r.release(false)
	p.busy.Add(-1)
}

func (p *workerPool) fixedWorker(queue chan Request) {
	defer p.enroll()()
	for q := range queue {
		p.run(q, queue)
	}
}

func (p *workerPool) elasticWorker(q Request) {
	defer p.enroll()()
	p.run(q, nil)
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		select {
		case q, ok := <-p.q:
			if !ok {
				return
			}
			p.run(q, nil)
			t.Reset(workerIdle)
		case <-t.C:
			return
		}
	}
}

// adopt makes the goroutine gid, an inline handler about to lose the
// loop (handOff), one of the pool's: a running Background handler, which
// Close and Shutdown wait for. It reports false once the pool has stopped
// (so Close never waits for a goroutine that joined after it looked).
// leave undoes it, from the goroutine itself once its handler returned,
// or from handOff if the handler returned first.
func (p *workerPool) adopt(gid uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return false
	}
	p.busy.Add(1)
	p.wg.Add(1)
	p.gids.Store(gid, struct{}{})
	return true
}

func (p *workerPool) leave(gid uint64) {
	p.gids.Delete(gid)
	p.busy.Add(-1)
	p.wg.Done()
}

// enroll records the calling goroutine as a worker, until the function it
// returns is called.
func (p *workerPool) enroll() func() {
	id := goroutineID()
	p.gids.Store(id, struct{}{})
	return func() { p.gids.Delete(id) }
}

// isWorker reports whether the calling goroutine is one of the workers
// (a few microseconds: for Close and Shutdown only).
func (p *workerPool) isWorker() bool {
	_, ok := p.gids.Load(goroutineID())
	return ok
}

// idle reports whether no background handler is queued or running, not
// counting the caller's own if it is a worker.
func (p *workerPool) idle(self bool) bool {
	n := p.busy.Load()
	if self {
		n--
	}
	return n <= 0
}

// stop refuses new requests and lets the workers finish what they have.
// Their handlers may still make calls and answer: the endpoint, closed by
// then, fails those at once, so nothing here waits on the loop.
func (p *workerPool) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	if p.qs != nil {
		for _, q := range p.qs {
			close(q)
		}
		return
	}
	close(p.q)
}

// wait returns when every worker has exited.
func (p *workerPool) wait() { p.wg.Wait() }
