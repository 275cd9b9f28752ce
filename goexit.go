package erpc

import (
	"context"
	"runtime"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
)

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
		if !returned {
			ep.exitedOnLoop(recover(), "a Post function", command{})
		}
	}()
	fn()
	returned = true
}

// exitedOnLoop is the deferred check of user code the loop called (what
// names it) that did not return: p is what recover gave. A panic goes on
// as it came. A Goexit takes only the loop's goroutine (goexitOnLoop),
// and next, if it is a command, runs first on the next one.
func (ep *Endpoint) exitedOnLoop(p any, what string, next command) {
	if p != nil {
		panic(p)
	}
	ep.goexitOnLoop(what, next)
}

// goexitOnLoop is run by the deferred call of user code the loop called
// (what names it: a continuation, a Post function, a StatsHandler method)
// that ended the loop's goroutine with runtime.Goexit, which no recover
// stops. It logs once, naming what. The goroutine gives up the loop as a
// handed-off one does: it withdraws its identity (watch.gid and watch.g),
// so that no later goroutine reusing its g passes startOnLoop's check,
// requeues the rest of the command batch it was running, ahead of what
// was posted since, and, ahead of that, next (if its kind is set: the
// work the exiting code's caller still owed, which the loop's code
// cannot do on a goroutine that is ending), and starts a fresh goroutine
// that goes on with the loop's turns (or finishes stopping it, if it was
// stopping: stop runs again from the start, which it may, as the
// transport closes only after the last user code). The loop's stack
// holds no other deferred call (see turns), so nothing of the loop's
// runs on the way out.
func (ep *Endpoint) goexitOnLoop(what string, next command) {
	ep.log.Error("erpc: "+what+" called runtime.Goexit (t.FailNow or similar); "+
		"the event loop goes on on a fresh goroutine", "callback", what)
	var rest []command
	if b := ep.loop.batch; b != nil {
		rest = b[ep.loop.batchNext:]
		ep.loop.batch = nil
	}
	if next.kind != 0 {
		rest = append([]command{next}, rest...)
	}
	ep.cmds.requeue(rest)
	ep.watch.handing.Lock() // no blockingRefused or handoff looks at gid meanwhile
	ep.watch.setLoop(0)
	ep.watch.handing.Unlock()
	runtime.UnlockOSThread() // a busy-polling loop's thread goes back to the runtime
	go ep.resume()
}

// The StatsHandler methods the loop calls, named in the log of one that
// ends the loop's goroutine (runtime.Goexit). Each call below is the last
// step of the loop's work for its call or session, or its guard does what
// was left: the rest of the loop's work is where the next goroutine finds
// it (events in the engine, commands in the queue).
const (
	statsCallBegin    = "StatsHandler.CallBegin"
	statsCallEnd      = "StatsHandler.CallEnd"
	statsSessionEvent = "StatsHandler.SessionEvent"
)

// errStatsBeginExit answers a request whose CallBegin ended the loop's
// goroutine: its handler never ran (beginServed).
var errStatsBeginExit = &Error{Code: Internal, Msg: "the server's " + statsCallBegin + " called runtime.Goexit"}

// beginServed tells sh that the call of r, which newRequest is making,
// begins. If CallBegin ends the goroutine, the request is refused as
// never run (Internal), r goes back to the pool, and the loop goes on
// on a fresh goroutine.
func (ep *Endpoint) beginServed(sh StatsHandler, now proto.Time, r *request) context.Context {
	returned := false
	defer func() {
		if !returned {
			p := recover()
			if p == nil {
				_ = ep.eng.Respond(now, r.h, uint8(Internal), refusalPayload(errStatsBeginExit))
				r.release(true) // the run's and the answer's references: neither will come
				r.release(true)
			}
			ep.exitedOnLoop(p, statsCallBegin, command{})
		}
	}()
	ctx := sh.CallBegin(callerCtx{context.Background(), r.md, r.peer, r.auth},
		CallInfo{Method: r.handler.name, Server: true, Peer: r.peer, Start: r.start, ReqBytes: len(r.data)})
	returned = true
	return ctx
}

// endServed tells sh of a served call's end, as the last step of the
// loop's work for it.
func (ep *Endpoint) endServed(sh StatsHandler, ctx context.Context, info CallInfo, end CallEnd) {
	returned := false
	defer func() {
		if !returned {
			ep.exitedOnLoop(recover(), statsCallEnd, command{})
		}
	}()
	sh.CallEnd(ctx, info, end)
	returned = true
}

// refusedServed tells sh of a request refused at once (begin and end), as
// the last step of the loop's work for it.
func (ep *Endpoint) refusedServed(sh StatsHandler, info CallInfo, err *Error) {
	returned, what := false, statsCallBegin
	defer func() {
		if !returned {
			ep.exitedOnLoop(recover(), what, command{})
		}
	}()
	ctx := sh.CallBegin(context.Background(), info)
	what = statsCallEnd
	sh.CallEnd(ctx, info, CallEnd{Code: err.Code, Err: err})
	returned = true
}

// endCallOnLoop tells the StatsHandler of the end (resp, err) of c, an
// async call, before its continuation runs. If CallEnd ends the
// goroutine, the continuation runs first on the next one (cmdContinue),
// with the call's outcome kept in c. Either way CallEnd is told once.
func (ep *Endpoint) endCallOnLoop(c *call, resp []byte, err error) {
	ctx := c.stats
	c.stats = nil
	returned := false
	defer func() {
		if !returned {
			c.resp, c.err = resp, err
			ep.exitedOnLoop(recover(), statsCallEnd, command{kind: cmdContinue, call: c})
		}
	}()
	ep.opts.stats.CallEnd(ctx, c.statsInfo, CallEnd{RespBytes: len(resp), Code: CodeOf(err), Err: err,
		Duration: time.Since(c.statsInfo.Start), Retransmits: c.retx})
	returned = true
}

// beginCallOnLoop tells the StatsHandler that c, an async call
// (Session.Go), begins, as the call's first step on the loop, and puts a
// tracer's metadata in its request. If CallBegin ends the goroutine
// (runtime.Goexit), the call goes on without stats, first on the next
// goroutine: its continuation runs once, with its outcome.
func (ep *Endpoint) beginCallOnLoop(c *call) {
	c.statsDue = false
	returned := false
	defer func() {
		if !returned {
			c.stats = nil
			ep.exitedOnLoop(recover(), statsCallBegin, command{kind: cmdCall, call: c})
		}
	}()
	c.stats = ep.opts.stats.CallBegin(context.Background(), c.statsInfo)
	returned = true
	if md, ok := c.stats.Value(outgoingKey{}).(Metadata); ok {
		c.req, c.meta = withMetadata(md, c.req) // a tracer's context, say
	}
}

// sessionEventOnLoop tells sh of a session up or down, as the last step of
// the loop's work for the engine's event.
func (ep *Endpoint) sessionEventOnLoop(sh StatsHandler, ev SessionEvent) {
	returned := false
	defer func() {
		if !returned {
			ep.exitedOnLoop(recover(), statsSessionEvent, command{})
		}
	}()
	sh.SessionEvent(ev)
	returned = true
}
