package erpc

import (
	"sync"
	"sync/atomic"
)

// workerPool runs background handlers. All workers take requests from one
// bounded queue (NEBULA's single queue, which balances load better than a
// queue per worker); its depth bounds the waiting, so a request that would
// wait behind more than about two per worker is refused at once instead.
type workerPool struct {
	ep      *Endpoint
	n       int
	q       chan *Request
	once    sync.Once
	started atomic.Bool
	wg      sync.WaitGroup
	busy    atomic.Int32
}

func newWorkerPool(ep *Endpoint, n, depth int) *workerPool {
	return &workerPool{ep: ep, n: n, q: make(chan *Request, depth)}
}

// start launches the workers, the first time a background handler is
// registered: an endpoint that only makes calls runs none.
func (p *workerPool) start() {
	p.once.Do(func() {
		p.started.Store(true)
		for range p.n {
			p.wg.Go(p.work)
		}
	})
}

func (p *workerPool) work() {
	for r := range p.q {
		p.busy.Add(1)
		p.ep.runHandler(r)
		p.busy.Add(-1)
	}
}

// submit queues r for a worker, or reports false if the queue is full.
func (p *workerPool) submit(r *Request) bool {
	select {
	case p.q <- r:
		return true
	default:
		return false
	}
}

// idle reports whether no background handler is queued or running.
func (p *workerPool) idle() bool { return len(p.q) == 0 && p.busy.Load() == 0 }

// stop lets the workers finish what they have and waits for them.
func (p *workerPool) stop() {
	p.once.Do(func() {}) // no start after stop
	close(p.q)
	p.wg.Wait()
}
