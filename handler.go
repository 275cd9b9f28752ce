package erpc

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/erpc-go/erpc/codec"

	"github.com/erpc-go/erpc/internal/proto"
)

// HandlerOption configures a handler.
type HandlerOption func(*handler)

// Background runs the handler on the endpoint's worker goroutines from the
// start instead of inline on the event loop. Without it a handler runs
// inline, the fastest path for a short handler, and one that blocks or
// runs long is handed off (see WithHandoff): it stalls the endpoint only
// for the handoff threshold, then finishes as a Background handler would.
// Background saves that threshold for handlers known to block (a
// blocking Call made by an inline handler hands the loop off at once,
// without waiting for it). By default a background request runs at once
// on a goroutine of its own (reused from request to request), up to the
// endpoint's bound on held requests; WithWorkers instead gives a fixed
// pool fed by one bounded queue, which refuses requests with
// ResourceExhausted when full.
func Background() HandlerOption { return func(h *handler) { h.background = true } }

// OnLoop keeps an inline handler on the event loop until it returns,
// however long it runs: it is never handed off. Such a handler, like a
// Session.Go continuation or a Post function, may share state with them
// without a lock; and like them it must not block, since every call and
// request of the endpoint waits while it runs (a stall is logged, see
// WithStallLog). OnLoop handlers of one session run in the order its
// requests arrive; a handler that may be handed off does not keep that
// order (WithHandoff).
func OnLoop() HandlerOption { return func(h *handler) { h.onLoop = true } }

type handler struct {
	name       string
	idx        int // dense, per server: an endpoint's per-method state
	background bool
	onLoop     bool            // never handed off (OnLoop)
	run        func(r Request) // answers r, at once or later
	labels     context.Context // pprof labels of its background goroutines: erpc.method=name
	wantsCtx   bool            // run always asks for the request's context (Handle, Register)
	codec      codec.Codec     // Register: WithCodec's, instead of the one the types call for
	info       MethodInfo
}

// WithCodec makes a Register handler encode its request and response with
// c instead of the codec their types call for (codec.JSON, say). Its
// callers must use the same codec (WithCallCodec).
func WithCodec(c codec.Codec) HandlerOption { return func(h *handler) { h.codec = c } }

// handlerTable maps method IDs to handlers. A serving endpoint reads it
// without a lock: it no longer changes.
type handlerTable struct {
	byID map[uint32]*handler
	n    int // handlers (a typed one is under two IDs)
}

func (t *handlerTable) lookup(id uint32) *handler {
	if t == nil {
		return nil
	}
	return t.byID[id]
}

// HandleRaw registers the fastest form of handler: it gets the Request
// itself, reads its Data in place (no copy), and answers with Respond or
// RespondError, now or later (after nested calls, say) and from any
// goroutine. It must answer every request exactly once (a second answer
// returns an error and is dropped). For a zero-allocation answer, fill
// ResponseBuffer and pass it to Respond, or answer with (part of) Data
// itself. It runs inline on the event loop, and finishes on a goroutine
// of its own if it runs past the handoff threshold (WithHandoff), unless
// registered with Background or OnLoop.
func (s *Server) HandleRaw(method string, fn func(r Request), opts ...HandlerOption) error {
	h := &handler{name: method, run: fn}
	for _, o := range opts {
		o(h)
	}
	return s.register(h)
}

// Handle registers a handler of raw bytes: it returns the response, or an
// error (an *Error keeps its code; any other error becomes Unknown). The
// response may be req itself or part of it (the endpoint keeps that
// buffer, with no copy) or any other slice, which the endpoint copies
// before the handler's return is complete: either way the handler may
// reuse its own memory afterwards. req is the handler's to read (and
// write) until it returns, and no longer. That holds with server
// interceptors too, even one that returns before the handler does (a
// timeout that runs next in a goroutine): the request is answered with
// what the interceptor returned, and the handler, still running, reads a
// copy of the request that the endpoint never reuses (the one cost of
// interceptors to req: without them the handler reads the endpoint's
// memory, with no copy). A panic becomes an Internal error and does not
// stop the endpoint. The handler runs inline on the event loop, and may
// block: one still running after the handoff threshold (WithHandoff)
// loses the loop to a fresh goroutine and finishes off it, as a
// Background handler (Register's handlers and generated ones alike).
func (s *Server) Handle(method string, fn func(ctx context.Context, req []byte) ([]byte, error), opts ...HandlerOption) error {
	if fn == nil {
		return s.HandleRaw(method, nil, opts...)
	}
	info := &UnaryServerInfo{Method: method}
	next := func(ctx context.Context, req any) (any, error) { return fn(ctx, req.([]byte)) }
	return s.handleWithCtx(method, func(r Request) {
		var resp []byte
		var err error
		if s.intercept == nil {
			resp, err = fn(r.runContext(), r.runData())
		} else {
			// The interceptor may return before next does, and then the
			// answer lets the endpoint reuse its memory while the handler
			// still reads req: the handler gets a copy of its own.
			var out any
			out, err = s.intercept(r.runContext(), bytes.Clone(r.runData()), info, next)
			resp, _ = out.([]byte)
		}
		if err != nil {
			r.RespondError(err)
			return
		}
		r.Respond(resp)
	}, opts)
}

// handleWithCtx registers a handler that always asks for its request's
// context: the endpoint makes it ahead, from a slab.
func (s *Server) handleWithCtx(method string, fn func(r Request), opts []HandlerOption) error {
	h := &handler{name: method, run: fn, wantsCtx: true}
	for _, o := range opts {
		o(h)
	}
	return s.register(h)
}

// serve starts handling a request that arrived whole (on the loop).
func (ep *Endpoint) serve(now proto.Time, h proto.ReqHandle) {
	hd := ep.handlers.lookup(h.Type())
	switch {
	case hd == nil:
		// The client names the method in its error: it knows the name.
		// Refusals say the request never ran (see NotExecuted).
		ep.refuse(now, h, "", errUnknownMethod, refusalPayload(&Error{}))
		return
	case ep.state.Load() != stateOpen:
		ep.loop.lastRefusal = now // Shutdown lingers while requests come (drained)
		ep.refuse(now, h, hd.name, errShuttingDown, refusalPayload(errShuttingDown))
		return
	}
	r := ep.newRequest(now, h, hd)
	q := Request{r: r, gen: r.gen()}
	if r.badMeta { // the handler never sees a request it cannot read
		_ = q.answer(uint8(InvalidArgument), refusalPayload(errBadMetadata), true)
		r.release(true)
		return
	}
	if hd.background {
		if !ep.workers.submit(q) {
			ep.refuseFull(now, r)
		} else {
			ep.loop.thread.wokeGoroutine()
		}
		return
	}
	ep.runInline(now, q)
}

// refuseFull refuses r, which the fixed pool's full queue did not take,
// with a NACK (the client fails fast with ResourceExhausted), and tells
// the StatsHandler after, as the last step (see endServed).
func (ep *Endpoint) refuseFull(now proto.Time, r *request) {
	sh := ep.opts.stats
	var st servedEnd
	if sh != nil {
		st = servedEnd{r.stats, CallInfo{Method: r.handler.name, Server: true, Peer: r.peer, Start: r.start, ReqBytes: len(r.data)},
			CallEnd{Code: ResourceExhausted, Err: errQueueFull, Duration: time.Since(r.start)}}
	}
	_ = ep.eng.Reject(now, r.h)
	r.end(context.Canceled)
	r.release(true) // the answer's reference: there will be no answer
	r.release(true) // the run's
	if sh != nil {
		ep.endServed(sh, st.ctx, st.info, st.end)
	}
}

// runInline runs an inline handler on the loop. An answer given while it
// runs, by it or by a goroutine it started, is sent right after it
// returns, without a trip through the command queue.
//
// The handler may lose the loop while it runs (handOff). So everything the
// loop writes for it is written before phInline is set, which publishes
// it to the next owner, and nothing of the loop's is touched from there
// until the handler returns and the loop learns, by clearing phInline,
// whether it still holds the loop. If it does not, the request is the
// handler's alone, as a Background one's: the answer went or goes through
// the queue, and the goroutine leaves (leaveHandedOff), never returning
// into the loop's code.
func (ep *Endpoint) runInline(now proto.Time, q Request) {
	r := q.r
	ep.watch.running(r.handler)
	if r.handler.onLoop {
		ep.watch.inline.Store(nil) // no run for the watchdog to take
	} else {
		ep.watch.inline.Store(r)
	}
	r.state.Or(phInline)
	ep.runHandler(q, exitPlan{ep: ep, inline: true})
	s := r.state.And(^uint64(phInline)) // returns the old value
	if s&phInline == 0 {
		ep.leaveHandedOff(r) // does not return
	}
	// The run's reference goes first: sendAnswer's last step may end the
	// goroutine (endServed). An answer's reference keeps r meanwhile.
	r.release(true)
	if s&phAnswered != 0 {
		ep.sendAnswer(now, r)
	} // else answered later, through the queue
}

// runHandler runs q's handler, turning a panic into an Internal error if
// the request is not answered yet. The request is recycled only after this
// returns, so a panic after the answer cannot reach another request. A
// handler that ends its goroutine (runtime.Goexit, as t.FailNow does)
// never returns here: its request gets the same Internal answer, and
// exit does for the ending goroutine what its caller would have done.
func (ep *Endpoint) runHandler(q Request, exit exitPlan) {
	returned := false
	defer func() {
		p := recover()
		if p == nil && returned {
			return
		}
		name := q.r.handler.name // the run's reference keeps it, answered or not
		if p != nil {
			// The server's own failure, not the handler's answer: marked
			// so that a Client holds it against this replica.
			answered := q.answer(uint8(Internal), faultPayload(Errorf(Internal, "handler panicked: %v", p)), true) != nil
			ep.log.Error(fmt.Sprintf("erpc: handler %q panicked: %v\n%s", name, p, debug.Stack()),
				"method", name, "panic", fmt.Sprint(p), "after_answer", answered)
			return
		}
		answered := q.RespondError(Errorf(Internal, "handler called runtime.Goexit")) != nil
		ep.log.Error(fmt.Sprintf("erpc: handler %q called runtime.Goexit (t.FailNow or similar)", name),
			"method", name, "after_answer", answered)
		exit.goexit(q.r)
	}()
	q.r.handler.run(q)
	returned = true
}
