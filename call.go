package erpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/wire"
)

// call is one client call on its way through the loop. Calls are pooled:
// a blocking call allocates nothing once the pool is warm.
type call struct {
	sess     *Session
	method   string
	id       uint32
	req      []byte
	resp     []byte
	deadline proto.Time
	meta     bool // req starts with a metadata block
	sid      proto.SessionID
	engID    proto.CallID
	state    atomic.Int32                 // callQueued, callTaken or callWithdrawn
	done     chan struct{}                // signaled once, for blocking calls
	cont     func(resp []byte, err error) // for async calls, run on the loop
	err      error
	retx     int  // retransmissions, for a StatsHandler
	resent   bool // sent again after its first session ended before it ran
	// The answer's headers and trailers, if it carried any (gotMeta;
	// respmeta_call.go).
	gotMeta                 bool
	respHeader, respTrailer Metadata
	// An async call's StatsHandler record (blocking calls keep theirs on
	// the caller's stack).
	stats     context.Context
	statsInfo CallInfo
	statsDue  bool // its CallBegin is owed, on the loop (beginCallOnLoop)
}

// A blocking call is queued for the loop, taken by it, or withdrawn by its
// caller (whose context ended) before the loop took it.
const (
	callQueued int32 = iota
	callTaken
	callWithdrawn
)

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

func getCall(s *Session, method string, req, resp []byte) *call {
	c := callPool.Get().(*call)
	c.sess, c.method, c.id, c.req, c.resp = s, method, methodID(method), req, resp
	c.deadline = proto.Never
	c.state.Store(callQueued)
	return c
}

func putCall(c *call) {
	*c = call{done: c.done}
	callPool.Put(c)
}

// Call sends req to method on the session's server and waits for the
// response. resp is a buffer to reuse: the response is written into it when
// it is large enough, so a caller that passes the previous response back
// allocates nothing. Call honours ctx's deadline and cancellation: the
// deadline travels to the server's handler (as the time left when the
// request goes out, as gRPC's does: the handler's deadline is the
// caller's, later by the request's transit), the server is told to drop a
// canceled request, and the call returns an error with code
// DeadlineExceeded or Canceled, for which errors.Is(err,
// context.DeadlineExceeded) (or context.Canceled) holds.
//
// The endpoint reads req until Call returns, and never after. Call returns
// when ctx ends, whatever the endpoint's loop is doing. Called from an
// inline handler, it first hands the endpoint's loop off (see WithHandoff):
// the handler waits for its answer, and finishes, as a Background handler.
// Called on the loop where that cannot be done (a continuation, a Post
// function, an OnLoop handler), where it could never complete, it fails
// at once with FailedPrecondition: use Session.Go there. That is decided
// by the goroutine that calls, not by ctx: a continuation on the loop is
// refused whatever context it passes.
func (s *Session) Call(ctx context.Context, method string, req, resp []byte) ([]byte, error) {
	id := methodID(method)
	if icpt := s.ep.clientIntercept; icpt != nil {
		return s.callIntercepted(ctx, icpt, method, id, req, resp)
	}
	return s.callStats(ctx, method, id, req, resp)
}

// callIntercepted is Call through client interceptors (apart, so that
// Call without them keeps its buffers off the heap).
func (s *Session) callIntercepted(ctx context.Context, icpt UnaryClientInterceptor, method string, id uint32, req, resp []byte) ([]byte, error) {
	err := icpt(ctx, method, req, &resp, s, func(ctx context.Context, method string, rq, rs any) error {
		out, err := s.callStats(ctx, method, id, rq.([]byte), *rs.(*[]byte))
		*rs.(*[]byte) = out
		return err
	})
	return resp, err
}

// callStats is a call as its endpoint's StatsHandler sees it.
func (s *Session) callStats(ctx context.Context, method string, id uint32, req, resp []byte) ([]byte, error) {
	h := s.ep.opts.stats
	if h == nil {
		return s.callRaw(ctx, method, id, req, resp, nil)
	}
	info := CallInfo{Method: method, Peer: s.addr, Target: s.target, Start: time.Now(), ReqBytes: len(req)}
	ctx = h.CallBegin(ctx, info)
	var retx int
	out, err := s.callRaw(ctx, method, id, req, resp, &retx)
	h.CallEnd(ctx, info, CallEnd{RespBytes: len(out), Code: CodeOf(err), Err: err, Duration: time.Since(info.Start), Retransmits: retx})
	return out, err
}

// callContextError is the error of a call to method that ctx ended: what
// and where, as every call error says.
func (s *Session) callContextError(ctx context.Context, method string) *Error {
	e := contextError(ctx)
	e.Msg = fmt.Sprintf("call %q to %s: %s", method, s.target, e.Msg)
	return e
}

// callRaw is Call with the method's ID on the wire given, and no
// interceptor or stats; retx, if not nil, gets the call's retransmissions.
func (s *Session) callRaw(ctx context.Context, method string, id uint32, req, resp []byte, retx *int) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, notRun(s.callContextError(ctx, method))
	}
	if s.calledOnLoop() {
		return nil, notRun(errOnLoop("a blocking Call", "use Session.Go there, or make the call from a handler without erpc.OnLoop()"))
	}
	meta := false
	if md, ok := ctx.Value(outgoingKey{}).(Metadata); ok {
		withMD, m := withMetadata(md, req) // a copy of req behind the block
		if n := len(withMD) - len(req); n > MaxMetadataSize {
			// The server would refuse it unread, as malformed: say why here.
			return nil, notRun(&Error{Code: InvalidArgument, Msg: fmt.Sprintf(
				"call %q to %s: the request's metadata is %d bytes, over MaxMetadataSize (%d bytes)", method, s.target, n, MaxMetadataSize)})
		}
		req, meta = withMD, m
	}
	c := getCall(s, method, req, resp)
	c.id = id
	c.meta = meta
	if d, ok := ctx.Deadline(); ok {
		c.deadline = proto.Time(d.Sub(s.ep.start))
	}
	s.ep.post(command{kind: cmdCall, call: c})
	select {
	case <-c.done:
	case <-ctx.Done():
		if c.state.CompareAndSwap(callQueued, callWithdrawn) {
			return nil, notRun(s.callContextError(ctx, method)) // the loop never saw it; it recycles c
		}
		s.ep.post(command{kind: cmdCancel, call: c})
		// The loop reads req only when it sends, and processes queued
		// commands (this cancel, which withdraws the call's packets)
		// before every send. So while it runs user code (a handler that
		// holds it up, say), the caller may have its buffer back at once;
		// otherwise the loop is at work and answers soon.
		if s.ep.watch.since.Load() >= 0 {
			s.ep.checkStall()
			return nil, s.callContextError(ctx, method)
		}
		<-c.done
		// c is not recycled: the cancel command may still be queued and
		// must not find c reused by another call.
		if c.gotMeta {
			c.deliverResponseMetadata(ctx)
		}
		if c.err == nil { // it completed just before the cancel
			return c.resp, nil
		}
		return nil, s.callContextError(ctx, method)
	}
	resp, err := c.resp, c.err
	if c.gotMeta {
		c.deliverResponseMetadata(ctx)
	}
	if retx != nil {
		*retx = c.retx
	}
	putCall(c)
	return resp, err
}

// calledOnLoop reports whether a blocking call is being made on the
// session's endpoint's own loop, by code that cannot leave it (an inline
// handler leaves it here: blockingRefused). It asks about the calling
// goroutine, not about the call's context: a request's context may be
// carried anywhere (to a goroutine an inline handler started, to a
// continuation on the loop). While the loop runs no user code this is
// one atomic load.
func (s *Session) calledOnLoop() bool { return s.ep.blockingRefused() }

// Go sends req to method and returns at once; done runs on the endpoint's
// event loop when the call completes, with the response (in resp if it
// fit) or the error. It never runs inside this Go: if the endpoint has
// closed before its loop took the call, done gets the Unavailable error
// on a goroutine of its own, which may run after Close has returned. done must not block: it may post more calls (nested
// calls) or respond to a request, but long work belongs on another
// goroutine. The engine holds req and resp until done runs.
func (s *Session) Go(method string, req, resp []byte, done func(resp []byte, err error)) {
	c := getCall(s, method, req, resp)
	c.cont = done
	c.state.Store(callTaken)
	if s.ep.opts.stats != nil {
		// CallBegin runs on the loop, as the call's first step there
		// (beginCallOnLoop): user code that ends its goroutine then cuts
		// short no code of erpc's, which may be the caller (a stream's
		// exchange, a Client's next attempt).
		c.statsInfo = CallInfo{Method: method, Peer: s.addr, Target: s.target, Start: time.Now(), ReqBytes: len(req)}
		c.statsDue = true
		s.ep.post(command{kind: cmdCall, call: c})
		return
	}
	if s.ep.startOnLoop(c) {
		return
	}
	s.ep.post(command{kind: cmdCall, call: c})
}

// startOnLoop starts c in the engine at once if the caller is user code
// on c's endpoint's loop (a continuation, an inline handler, a Post
// function): such a call needs neither the command queue nor a wake-up,
// and goes out with the turn's other packets. The loop is pinned while it
// does (a handoff waits for pinG), since an inline handler may lose the
// loop at any moment. It reports false, and the call takes the queue,
// off the loop, on a platform without loopG, and whenever the call cannot
// simply start (see startNow): the queue's path then settles it, later,
// so a continuation is never run from inside the Go that a continuation
// made.
func (ep *Endpoint) startOnLoop(c *call) bool {
	w := &ep.watch
	if w.since.Load() < 0 {
		return false // the loop runs no user code: the caller is not it
	}
	g := loopG()
	if g == 0 || w.g.Load() != g || !w.pinG.CompareAndSwap(0, g) {
		return false
	}
	ok := w.g.Load() == g && ep.startNow(c) // a handoff clears g before it waits for pinG
	w.pinG.Store(0)
	return ok
}

// startNow starts c in the engine at the turn's time if its session is
// up and the engine takes it; false, with nothing changed, otherwise.
// On the loop only.
func (ep *Endpoint) startNow(c *call) bool {
	s := c.sess
	if ep.state.Load() != stateOpen || !s.live || s.closed.Load() {
		return false
	}
	id, err := ep.eng.StartCallFlags(ep.loop.now, s.sid, c.id, c.req, c.resp, c.deadline, c.flags(), c)
	if err != nil {
		return false // the engine changed nothing: startCall reports it
	}
	c.sid, c.engID = s.sid, id
	ep.loop.directCalls++
	return true
}

func (c *call) flags() wire.Flags {
	if c.meta {
		return wire.FlagMetadata
	}
	return 0
}

// startCall hands a posted call to the engine (on the loop).
func (ep *Endpoint) startCall(now proto.Time, c *call) {
	if ep.state.Load() != stateOpen {
		ep.finishOnLoop(c, nil, c.closedError())
		return
	}
	sid, serr := c.sess.ensure(now)
	if serr != nil {
		ep.finishOnLoop(c, nil, c.located(serr))
		return
	}
	id, err := ep.eng.StartCallFlags(now, sid, c.id, c.req, c.resp, c.deadline, c.flags(), c)
	if errors.Is(err, proto.ErrNoSession) && !c.resent && !c.sess.closed.Load() {
		// The engine session ended and its down event is still queued:
		// the call never reached it; once more on a new one.
		c.resent = true
		c.sess.detach(sid, err)
		ep.startCall(now, c)
		return
	}
	if err != nil {
		ep.finishOnLoop(c, nil, ep.callError(c, err, 0, nil))
		return
	}
	c.sid, c.engID = sid, id
}

// completeCall settles the call an engine completion names (ev is the
// engine's, in place: TakeEvent).
func (ep *Endpoint) completeCall(now proto.Time, ev *proto.Event) {
	c := ev.Tag.(*call)
	c.retx += ev.Retransmits
	if ev.Meta && !ep.takeResponseMetadata(c, ev) {
		return // malformed: c failed
	}
	switch {
	case errors.Is(ev.Err, proto.ErrNotExecuted) && !c.resent && !c.sess.closed.Load() && !ep.eng.Alive(c.sid) &&
		!silentPeer(ev.Err):
		// The session ended (say, the server restarted) before the request
		// reached a live server: it never ran, so sending it again on a new
		// session keeps at-most-once. Once only, so a dead server fails it.
		// Only if the engine session has ended: one that is still open is
		// never forgotten (nothing would close it on either end).
		c.resent = true
		c.sess.detach(c.sid, ev.Err)
		ep.startCall(now, c)
	case ev.Err != nil || ev.Status != 0:
		ep.finishOnLoop(c, nil, ep.callError(c, ev.Err, ev.Status, ev.Data))
	default:
		ep.finishOnLoop(c, ev.Data, nil)
	}
}

// located is a copy of e, a failure of call c's session, saying what c
// called and where.
func (c *call) located(e *Error) *Error {
	l := *e
	l.Msg = c.where(l.Msg)
	return &l
}

// closedError is the error of call c, never sent, on a closed endpoint:
// "session closed" if its caller closed the session (which closes the
// endpoint too when erpc.Dial made it), else "endpoint closed".
func (c *call) closedError() *Error {
	if c.sess.closed.Load() {
		return c.located(errSessionClosed)
	}
	return c.located(errCallClosed)
}

// silentPeer reports whether a session ended because its server did not
// answer for a whole failure timeout (connecting or connected). A call
// that never ran on it is not sent again: a new session to the same
// address would wait out another failure timeout, and a server that is
// gone must fail a call within one (doc.go). A restarted or closing
// server speaks (a reset, a close), and those calls are still resent.
func silentPeer(err error) bool {
	return errors.Is(err, proto.ErrConnectTimeout) || errors.Is(err, proto.ErrPeerTimeout)
}

// finishOnLoop completes c; an async call's continuation runs here, after
// the StatsHandler's CallEnd. A continuation or CallEnd that ends its
// goroutine (runtime.Goexit) takes only that goroutine: the loop goes on
// on a fresh one (goexitOnLoop), which runs the continuation first if
// CallEnd ended (endCallOnLoop).
func (ep *Endpoint) finishOnLoop(c *call, resp []byte, err error) {
	if c.cont == nil {
		c.finish(resp, err)
		ep.loop.thread.wokeGoroutine()
		return
	}
	if c.stats != nil {
		ep.endCallOnLoop(c, resp, err)
	}
	cont := c.cont
	putCall(c)
	ep.watch.running(continuationHandler)
	returned := false
	defer func() {
		if p := recover(); p != nil {
			ep.log.Error("erpc: call continuation panicked", "panic", p)
		} else if !returned {
			ep.goexitOnLoop("a Session.Go continuation", command{})
		}
	}()
	if err != nil {
		cont(nil, err)
	} else {
		cont(resp, nil)
	}
	returned = true
}

// finish records the outcome of a blocking call and wakes its caller.
func (c *call) finish(resp []byte, err error) {
	c.resp, c.err = resp, err
	c.done <- struct{}{}
}

// finishStopped settles call c, which the loop never took because it had
// stopped, with resp and err. A blocking call's caller gets err at once.
// An async call's continuation runs on a goroutine of its own: c was
// posted by a Session.Go (or by the loop's stop, for calls still queued),
// and run on the poster's stack a continuation would run inside the Go
// that started its call, and one that retries on failure would nest a Go
// per retry. Only a closed endpoint pays for the goroutine. onLoop: the
// loop's stop settles c (failQueued), so the StatsHandler's CallEnd is
// guarded as on the loop (endCallOnLoop).
func (ep *Endpoint) finishStopped(c *call, resp []byte, err error, onLoop bool) {
	if c.cont == nil {
		c.finish(nil, err)
		return
	}
	if c.statsDue { // it begins and ends here, for the loop's stop: CallBegin, then CallEnd
		if onLoop {
			ep.beginCallOnLoop(c)
		} else { // a Go that found the endpoint closed: never begun, not reported
			c.statsDue = false
		}
	}
	if c.stats != nil {
		if onLoop {
			ep.endCallOnLoop(c, resp, err)
		} else {
			ep.opts.stats.CallEnd(c.stats, c.statsInfo, CallEnd{RespBytes: len(resp), Code: CodeOf(err), Err: err,
				Duration: time.Since(c.statsInfo.Start), Retransmits: c.retx})
		}
	}
	cont := c.cont
	putCall(c)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ep.log.Error("erpc: call continuation panicked", "panic", p)
			}
		}()
		cont(resp, err)
	}()
}
