package erpc

import "runtime"

// exitPlan says what a handler's goroutine must do if the handler ends it
// with runtime.Goexit (t.FailNow in a test does), which no recover stops:
// the code after the handler call, which releases the request and keeps
// the books, never runs, so runHandler's deferred call runs goexit
// instead. Passed by value: a handler call allocates nothing for it.
type exitPlan struct {
	ep     *Endpoint
	inline bool         // the handler ran inline, on the loop's goroutine
	pool   *workerPool  // a Background handler's pool
	queue  chan Request // a fixed worker's queue, which gets a new worker
}

// goexit does, for a goroutine ending in r's handler, what its caller
// would have done after the handler returned.
func (x exitPlan) goexit(r *request) {
	if x.inline {
		x.ep.goexitInline(r)
		return
	}
	r.release(false)
	x.pool.busy.Add(-1)
	if x.queue == nil {
		return // an elastic worker: the next request starts another
	}
	x.pool.mu.Lock()
	defer x.pool.mu.Unlock()
	if !x.pool.stopped {
		queue := x.queue
		x.pool.wg.Go(func() { x.pool.fixedWorker(queue) })
	}
}

// goexitInline ends an inline handler's goroutine that called Goexit. If
// it still holds the loop, it gives the loop to a fresh goroutine first,
// as a handoff does (an OnLoop handler's too: its run is over); then it
// leaves as a handed-off handler leaves, without the Goexit already under
// way. The loop's stack holds no deferred call (see turns), so the
// unwinding runs nothing of the loop's.
func (ep *Endpoint) goexitInline(r *request) {
	ep.watch.handing.Lock()
	s := r.state.Load()
	if s&phInline != 0 && !ep.handOffLocked(r, s>>genShift) {
		// The pool has stopped, so it adopts no one: the loop is
		// stopping. It goes on without this goroutine, which leaves it
		// the way handOff would have.
		r.state.And(^uint64(phInline))
		ep.watch.setLoop(0)
		if s&phAnswered != 0 {
			ep.post(command{kind: cmdRespond, req: r})
		}
		ep.watch.handing.Unlock()
		r.release(false)
		runtime.UnlockOSThread()
		go ep.resume()
		return
	}
	ep.watch.handing.Unlock()
	ep.leftLoop(r)
}

// runPosted runs a Post function on the loop. One that ends its goroutine
// (runtime.Goexit) takes only that goroutine, as a continuation's does
// (goexitOnLoop); a panic is not this guard's business and goes on.
func (ep *Endpoint) runPosted(fn func()) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if p := recover(); p != nil {
			panic(p)
		}
		ep.goexitOnLoop()
	}()
	fn()
	returned = true
}

// goexitOnLoop is run by the deferred call of a continuation or Post
// function that ended the loop's goroutine with runtime.Goexit, which no
// recover stops. The goroutine gives up the loop as a handed-off one
// does: it withdraws its identity (watch.gid and watch.g), so that no
// later goroutine reusing its g passes startOnLoop's check, requeues the
// rest of the command batch it was running, ahead of what was posted
// since, and starts a fresh goroutine that goes on with the loop's turns
// (or finishes stopping it, if it was stopping: stop runs again from the
// start, which it may, as the transport closes only after the last user
// code). The loop's stack holds no other deferred call (see turns), so
// nothing of the loop's runs on the way out.
func (ep *Endpoint) goexitOnLoop() {
	ep.log.Error("erpc: a Session.Go continuation or Post function called runtime.Goexit (t.FailNow or similar); " +
		"the event loop goes on on a fresh goroutine")
	if b := ep.loop.batch; b != nil {
		ep.cmds.requeue(b[ep.loop.batchNext:])
		ep.loop.batch = nil
	}
	ep.watch.handing.Lock() // no blockingRefused or handoff looks at gid meanwhile
	ep.watch.setLoop(0)
	ep.watch.handing.Unlock()
	runtime.UnlockOSThread() // a busy-polling loop's thread goes back to the runtime
	go ep.resume()
}
