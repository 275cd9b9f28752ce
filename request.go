package erpc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
)

// Request is a request being served, as a HandleRaw handler gets it. It is
// a small handle: copy it freely, keep it past the handler's return and
// answer from any goroutine. Each request is answered exactly once, with
// Respond or RespondError; from then on the handle is spent: Data returns
// nil and a second answer returns an error, even though the endpoint
// reuses the memory behind it for later requests.
//
// Buffers: Data is the endpoint's memory, readable until the answer.
// Respond copies the response before it returns, unless it points into
// Data (an echo: the endpoint keeps the request's buffer as the response)
// or into memory from ResponseBuffer; so the caller may reuse its own
// buffer at once, and no answer costs a copy it does not need.
type Request struct {
	r   *request
	gen uint32
}

// request is the pooled state behind Request handles. gen changes each
// time it is recycled, which is what turns old handles stale.
type request struct {
	ep      *Endpoint
	state   atomic.Uint64 // gen<<32 | phase bits, see below
	refs    atomic.Int32  // the handler's run and the answer; recycled at 0
	handler *handler
	h       proto.ReqHandle // the engine's handle; the loop's only
	data    []byte          // the request, in engine memory, until answered
	peer    netip.AddrPort
	dl      time.Time // the caller's deadline, if hasDL
	hasDL   bool
	md      Metadata        // the caller's metadata; nil if it sent none
	stats   context.Context // what the StatsHandler's CallBegin returned, if any
	start   time.Time       // when it arrived, for the StatsHandler
	queued  time.Time       // when WithSLO's admission let it in, for its feedback
	queue   int             // 1 + the fixed pool's queue that admitted it, until answered; 0 if none
	badMeta bool            // its metadata block was malformed: the handler does not run

	ctx      atomic.Pointer[reqCtx] // made on first Context call
	canceled atomic.Bool            // the request ended: a context made now starts canceled

	// The answer, written by the one goroutine that wins the answer and
	// read by the loop after it.
	out    []byte // ResponseBuffer memory, and where a response is copied: from the engine's pool
	resp   []byte
	status uint8
}

// Phase bits of request.state.
const (
	phAnswering = 1 << iota // a goroutine is writing the answer
	phAnswered              // the answer is written
	phInline                // the handler runs inline on the loop: the loop sends the answer when it returns
)

func (r *request) gen() uint32 { return uint32(r.state.Load() >> 32) }

// live reports whether the handle names a request not yet answered.
func (q Request) live() bool {
	if q.r == nil {
		return false
	}
	s := q.r.state.Load()
	return uint32(s>>32) == q.gen && s&(phAnswering|phAnswered) == 0
}

// Data is the request message. It is valid until the request is answered;
// after that, and on a zero Request, Data is nil.
func (q Request) Data() []byte {
	if !q.live() {
		return nil
	}
	return q.r.data
}

// current reports whether the handle names the request its memory holds
// now (answered or not): its fields are that request's until it is
// recycled.
func (q Request) current() bool { return q.r != nil && q.r.gen() == q.gen }

// Method is the name the handler was registered under ("" on a spent
// handle).
func (q Request) Method() string {
	if !q.current() {
		return ""
	}
	return q.r.handler.name
}

// Peer is the address of the client that sent the request.
func (q Request) Peer() netip.AddrPort {
	if !q.current() {
		return netip.AddrPort{}
	}
	return q.r.peer
}

// Metadata is what the caller sent with the request, nil if nothing.
func (q Request) Metadata() Metadata {
	if !q.current() {
		return nil
	}
	return q.r.md
}

// Deadline is the caller's deadline for the request, if it sent one.
func (q Request) Deadline() (time.Time, bool) {
	if !q.current() {
		return time.Time{}, false
	}
	return q.r.dl, q.r.hasDL
}

// Context is the request's context: it carries the caller's deadline and
// is canceled when the caller cancels the call, its session ends, the
// endpoint closes, or the request is answered. Each request has its own,
// never reused, so it may be kept.
func (q Request) Context() context.Context {
	if q.r == nil || q.r.gen() != q.gen {
		return closedContext
	}
	return q.r.context()
}

// ResponseBuffer returns n bytes for the response: Respond with (part of)
// it costs no copy. It is the endpoint's memory from then on; build the
// response there and do not touch it after the answer.
func (q Request) ResponseBuffer(n int) []byte {
	if !q.live() || n < 0 {
		return make([]byte, max(n, 0))
	}
	return q.r.outBuf(n)
}

// outBuf returns n bytes of the request's response memory.
func (r *request) outBuf(n int) []byte {
	if cap(r.out) < n {
		r.out = make([]byte, n, proto.BufferCap(n))
	}
	return r.out[:n]
}

// Respond answers the request with resp (see Request for who owns what).
// Only the first answer counts; a later one, or one on a spent handle,
// returns an error.
func (q Request) Respond(resp []byte) error { return q.answer(0, resp, false) }

// respondOwned answers with resp, which the caller made for the answer
// and gives up: no copy.
func (q Request) respondOwned(resp []byte) error { return q.answer(0, resp, true) }

// RespondError answers the request with an error: an *Error keeps its code
// and message; any other error becomes Unknown with its message. A
// handler's error never says its request did not run (NotExecuted): the
// handler did run.
func (q Request) RespondError(err error) error {
	if err == nil {
		return q.answer(0, nil, false)
	}
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: Unknown, Msg: err.Error()}
		if CodeOf(err) == DeadlineExceeded || CodeOf(err) == Canceled {
			e.Code = CodeOf(err)
		}
	}
	if details, marked := withoutNotExecuted(e.Details); marked {
		c := *e
		c.Details = details
		e = &c
	}
	code := e.Code
	if code == OK {
		code = Unknown
	}
	return q.answer(uint8(code), encodeErrorPayload(e), true)
}

var errAnswered = errors.New("erpc: request already answered")

// answer writes the answer and hands it to the loop: at once through the
// command queue, or, while the handler runs inline, when it returns (which
// saves the queue's round trip on the hot path).
func (q Request) answer(status uint8, resp []byte, owned bool) error {
	r := q.r
	if r == nil {
		return errAnswered
	}
	var s uint64
	for {
		s = r.state.Load()
		if uint32(s>>32) != q.gen || s&(phAnswering|phAnswered) != 0 {
			return errAnswered
		}
		if r.state.CompareAndSwap(s, s|phAnswering) {
			break
		}
	}
	r.status = status
	switch {
	case len(resp) == 0:
		r.resp = nil
	case owned, proto.Within(resp, r.data), proto.Within(resp, r.out):
		r.resp = resp // the endpoint's memory already, or given to it
	default:
		r.resp = append(r.outBuf(len(resp))[:0], resp...)
	}
	for {
		s = r.state.Load()
		if r.state.CompareAndSwap(s, s&^phAnswering|phAnswered) {
			break
		}
	}
	if s&phInline == 0 {
		r.ep.post(command{kind: cmdRespond, req: r})
	}
	return nil
}

// context returns the request's context, making it on first use.
func (r *request) context() *reqCtx {
	if c := r.ctx.Load(); c != nil {
		return c
	}
	c := newReqCtx(r)
	if !r.ctx.CompareAndSwap(nil, c) {
		return r.ctx.Load()
	}
	if r.canceled.Load() { // ended before anyone asked
		c.cancel(context.Canceled)
	}
	return c
}

// end cancels the request's context, once: it ended (answered, canceled
// by its caller, its session or endpoint gone). err is the cause.
func (r *request) end(err error) {
	r.canceled.Store(true)
	if c := r.ctx.Load(); c != nil {
		c.cancel(err)
	}
}

// release drops one of the request's two references (its handler's run,
// its answer). The last one recycles it: onLoop says which pool can take
// it without a lock.
func (r *request) release(onLoop bool) {
	if r.refs.Add(-1) != 0 {
		return
	}
	ep := r.ep
	r.state.Store(uint64(r.gen()+1) << 32) // every handle to it is spent
	r.handler, r.h, r.data, r.resp, r.status = nil, proto.ReqHandle{}, nil, nil, 0
	r.peer, r.dl, r.hasDL, r.md, r.stats, r.queue = netip.AddrPort{}, time.Time{}, false, nil, nil, 0
	r.ctx.Store(nil)
	r.canceled.Store(false)
	if r.out != nil && onLoop {
		ep.eng.Recycle(r.out)
	}
	r.out = nil
	if onLoop {
		if len(ep.loop.reqFree) < maxPooledRequests {
			ep.loop.reqFree = append(ep.loop.reqFree, r)
		}
		return
	}
	ep.reqReturned.put(r)
}

// maxPooledRequests bounds the requests kept for reuse (each a small
// struct: their buffers go back to the engine's pool).
const maxPooledRequests = 1024

// returnedRequests is where goroutines other than the loop give back
// requests; the loop takes them all at once when its own pool is empty.
type returnedRequests struct {
	mu   sync.Mutex
	list []*request
}

func (q *returnedRequests) put(r *request) {
	q.mu.Lock()
	if len(q.list) < maxPooledRequests {
		q.list = append(q.list, r)
	}
	q.mu.Unlock()
}

func (q *returnedRequests) takeAll(dst []*request) []*request {
	q.mu.Lock()
	dst = append(dst, q.list...)
	clear(q.list)
	q.list = q.list[:0]
	q.mu.Unlock()
	return dst
}

// newRequest takes a request from the pool for the engine's request h (on
// the loop).
func (ep *Endpoint) newRequest(now proto.Time, h proto.ReqHandle, hd *handler) *request {
	free := ep.loop.reqFree
	if len(free) == 0 {
		free = ep.reqReturned.takeAll(free)
	}
	var r *request
	if n := len(free); n > 0 {
		r = free[n-1]
		free[n-1] = nil
		free = free[:n-1]
	} else {
		r = &request{ep: ep}
	}
	ep.loop.reqFree = free
	r.refs.Store(2)
	r.handler = hd
	r.h = h
	r.data = h.Data()
	// Response memory from the pool, as large as this method's last
	// response that needed it: a handler that builds its answer in
	// ResponseBuffer (or whose answer Respond copies) allocates nothing.
	if n := ep.loop.respHint[hd.idx]; n > 0 {
		r.out = ep.eng.Buffer(n)[:0]
	}
	r.peer = h.Peer()
	if d, ok := h.Deadline(); ok {
		r.dl, r.hasDL = ep.wallTime(d), true
	}
	if h.HasMetadata() {
		r.md, r.data, r.badMeta = parseRequestMetadata(r.data)
	}
	if sh := ep.opts.stats; sh != nil {
		r.start = time.Now()
		r.stats = sh.CallBegin(callerCtx{context.Background(), r.md, r.peer},
			CallInfo{Method: hd.name, Server: true, Peer: r.peer, Start: r.start, ReqBytes: len(r.data)})
	}
	if hd.wantsCtx {
		c := ep.loop.ctxSlab.next()
		c.init(r)
		r.ctx.Store(c)
	}
	h.SetTag(r)
	return r
}

// sendAnswer gives the engine a request's answer (on the loop). Response
// memory the engine does not take goes back to its pool, and the method's
// hint learns how much the next request should be given.
func (ep *Endpoint) sendAnswer(now proto.Time, r *request) {
	resp := r.resp
	gave := proto.Within(resp, r.out)
	hint := 0
	if gave {
		hint = len(resp)
	}
	ep.workers.answered(r)
	err := ep.eng.Respond(now, r.h, r.status, resp)
	if errors.Is(err, proto.ErrMsgTooLarge) {
		msg := fmt.Sprintf("the handler's response of %d bytes is larger than the session's maximum", len(resp))
		gave = false
		err = ep.eng.Respond(now, r.h, uint8(Internal), []byte(msg))
	}
	if err != nil && !errors.Is(err, proto.ErrRequestGone) {
		ep.log.Error("erpc: dropping response", "method", r.handler.name, "err", err)
	}
	if gave && err == nil {
		r.out = nil // the engine keeps it now
	}
	if sh := ep.opts.stats; sh != nil {
		ep.statsEnd(sh, now, r, len(resp))
	}
	ep.loop.respHint[r.handler.idx] = hint
	r.data, r.resp = nil, nil
	r.end(context.Canceled)
	r.release(true)
}

// statsEnd tells the StatsHandler a served call ended with r's answer.
func (ep *Endpoint) statsEnd(sh StatsHandler, now proto.Time, r *request, respBytes int) {
	end := CallEnd{Code: Code(r.status), RespBytes: respBytes, Duration: time.Since(r.start)}
	if end.Code != OK {
		msg, details := decodeErrorPayload(r.resp)
		end.Err = &Error{Code: end.Code, Msg: msg, Details: details}
		end.RespBytes = 0
	}
	sh.CallEnd(r.stats, CallInfo{Method: r.handler.name, Server: true, Peer: r.peer, Start: r.start, ReqBytes: len(r.data)}, end)
}

// runningInline reports whether the request of generation gen is being
// handled inline on its endpoint's loop right now.
func (r *request) runningInline(gen uint32) bool {
	s := r.state.Load()
	return uint32(s>>32) == gen && s&phInline != 0
}
