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
	"github.com/erpc-go/erpc/internal/wire"
)

// Request is a request being served, as a HandleRaw handler gets it. It is
// a small handle: copy it freely, keep it past the handler's return and
// use it from any goroutine. Each request is answered exactly once, with
// Respond or RespondError; from then on the handle is spent for good, even
// though the endpoint reuses the memory behind it for later requests: Data,
// Method, Peer, Metadata and Deadline return zero values, Context returns
// a canceled context, ResponseBuffer returns fresh memory, and an answer
// returns an error. Until then they return this request's values. None of
// this is a data race, whichever goroutine asks and whenever. A handle
// tells its request from the later ones in the same memory by a 48-bit
// generation: a handle stays spent for at least 2^48 later requests of its
// endpoint (9 years at a million a second), and for ever after, since
// memory whose generation would wrap around is retired, not reused.
//
// Buffers: Data is the endpoint's memory, readable until the answer.
// Respond copies the response before it returns, unless it points into
// Data (an echo: the endpoint keeps the request's buffer as the response)
// or into memory from ResponseBuffer; so the caller may reuse its own
// buffer at once, and no answer costs a copy it does not need. When
// several goroutines answer one request at once, the first answer is
// sent byte for byte as its Respond gave it, whatever the others write
// into their own memory or their ResponseBuffer's, before or after (Data
// is the one buffer they all share: write into it only to answer with it).
type Request struct {
	r   *request
	gen uint64 // the request's generation: request.state>>genShift
}

// request is the pooled state behind Request handles. gen changes each
// time it is recycled, which is what turns old handles stale.
//
// Its fields are written on the loop before a handle to it exists
// (newRequest) and when it is recycled, once it holds no reference
// (release); the answer's fields by the one goroutine that wins the
// answer. A handle reads the others only while it holds a reference
// (hold), so recycling waits for it: a reference is taken by a
// compare-and-swap of state that fails once the handle is spent.
type request struct {
	ep      *Endpoint
	state   atomic.Uint64 // gen<<genShift | refs<<refShift | phase bits, see below
	handler *handler
	h       proto.ReqHandle // the engine's handle; the loop's only
	data    []byte          // the request, in engine memory, until answered
	peer    netip.AddrPort
	auth    *PeerAuth // the session's (peerauth.go), shared and immutable; nil if nothing is known
	dl      time.Time // the caller's deadline, if hasDL
	hasDL   bool
	md      Metadata        // the caller's metadata; nil if it sent none
	stats   context.Context // what the StatsHandler's CallBegin returned, if any
	start   time.Time       // when it arrived, for the StatsHandler
	queued  time.Time       // when WithSLO's admission let it in, for its feedback
	queue   int             // 1 + the fixed pool's queue that admitted it, until answered; 0 if none
	badMeta bool            // its metadata block was malformed: the handler does not run
	// out is response memory from the engine's pool, handed out by
	// ResponseBuffer once (phOutGiven) or, if not, where the answer is
	// copied. Only newRequest and release write it.
	out     []byte
	outSent bool // the engine took out as the response; the loop's only

	ctx      atomic.Pointer[reqCtx] // made on first Context call
	canceled atomic.Bool            // the request ended: a context made now starts canceled

	// The answer, written by the one goroutine that wins the answer and
	// read by the loop after it; respFlags is wire.FlagMetadata when resp
	// starts with the response's metadata (respmeta.go).
	resp      []byte
	status    uint8
	respFlags wire.Flags
	respMeta  atomic.Pointer[responseMeta] // the handler's headers and trailers; nil if it set none
}

// Phase bits of request.state, below its reference count (phaseBits of
// them).
const (
	phAnswering = 1 << iota // a goroutine is writing the answer
	phAnswered              // the answer is written
	phInline                // the handler runs inline on the loop: the loop sends the answer when it returns
	phOutGiven              // ResponseBuffer gave out the response memory (out): no answer may copy into it
)

// The references to a request, counted in state: the handler's run, the
// answer (dropped once it is sent), and a handle's while it reads the
// request's fields. They have 12 bits, which leaves the generation 48
// (2^48 recycles of one request are 9 years at a million a second, and a
// request whose generation would wrap is retired). 4095 references at
// once is more than the run, the answer and the goroutines reading one
// request usually hold; past that, hold waits for a reader to let go (a
// reader holds its reference for a few loads) rather than carry into the
// generation. The last reference recycles the request.
const (
	phaseBits = 4
	refBits   = 12
	refShift  = phaseBits
	refOne    = 1 << refShift
	refMask   = (1<<refBits - 1) << refShift
	genShift  = refShift + refBits
	genLast   = 1<<(64-genShift) - 1 // the last generation: a request that reaches it is retired after it
)

// The phase bits fit in phaseBits (the constant overflows, and the build
// fails, if a phase bit is added without making room).
const _ uint = 1<<phaseBits - 1 - (phOutGiven<<1 - 1)

func (r *request) gen() uint64 { return r.state.Load() >> genShift }

// Respond answers the request with resp (see Request for who owns what).
// Only the first answer counts; a later one, or one on a spent handle,
// returns an error.
func (q Request) Respond(resp []byte) error { return q.answer(0, resp, false) }

// respondOwned answers with resp, which the caller made for the answer
// and gives up: no copy.
func (q Request) respondOwned(resp []byte) error { return q.answer(0, resp, true) }

// RespondError answers the request with an error: an *Error keeps its code,
// message and details; so does a gRPC status error (any error with a
// GRPCStatus method, as grpc's status.Error returns: no interceptor
// needed); a context error becomes Canceled or DeadlineExceeded; any other
// error becomes Unknown with its message. A handler's error never says its
// request did not run (NotExecuted): the handler did run; nor that the
// server itself failed (only a panic's answer says so, for a Client's
// ejection).
func (q Request) RespondError(err error) error {
	if err == nil {
		return q.answer(0, nil, false)
	}
	e := statusOf(err)
	if details, marked := withoutServerMarks(e.Details); marked {
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
// saves the queue's round trip on the hot path). The winner needs no
// reference of its own: the answer's keeps the request until it is sent.
func (q Request) answer(status uint8, resp []byte, owned bool) error {
	r := q.r
	if r == nil {
		return errAnswered
	}
	var s uint64
	for {
		s = r.state.Load()
		if s>>genShift != q.gen || s&refMask == 0 || s&spent != 0 {
			return errAnswered
		}
		if r.state.CompareAndSwap(s, s|phAnswering) {
			break
		}
	}
	r.status = status
	if r.respMeta.Load() != nil {
		resp, owned = r.sealResponseMetadata(resp, owned)
	}
	r.resp = r.answerMemory(resp, owned, s&phOutGiven != 0)
	s = r.state.Add(phAnswered - phAnswering) // phAnswering is set: this clears it and sets phAnswered
	if s&phInline == 0 {
		r.ep.post(command{kind: cmdRespond, req: r})
	}
	return nil
}

// answerMemory is where the answer resp is kept until sent: resp itself
// if it is the endpoint's memory already (Data, the response memory) or
// given to it, else a copy. The copy goes to the response memory unless
// ResponseBuffer handed that out (outGiven): whoever has it may still be
// writing there, so then the copy is fresh memory.
func (r *request) answerMemory(resp []byte, owned, outGiven bool) []byte {
	switch {
	case len(resp) == 0:
		return nil
	case owned, proto.Within(resp, r.data), outGiven && proto.Within(resp, r.out):
		return resp
	case !outGiven && cap(r.out) >= len(resp):
		return append(r.out[:0], resp...)
	default:
		return append(make([]byte, 0, proto.BufferCap(len(resp))), resp...)
	}
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

// release drops one of the request's references (see refOne). The last
// one recycles it: onLoop says which pool can take it without a lock, and
// whether its response memory can go back to the engine's pool. That
// memory does not if ResponseBuffer handed it out and the engine did not
// take it as the answer: whoever has it may still write there. A request
// of the last generation is retired instead: with no reference, at its
// generation for good, every handle to it stays spent, and it goes to no
// pool (the garbage collector takes it once no handle is left).
func (r *request) release(onLoop bool) {
	s := r.state.Add(^uint64(refOne - 1)) // minus refOne
	if s&refMask != 0 {
		return
	}
	ep := r.ep
	recycleOut := onLoop && r.out != nil && !r.outSent && s&phOutGiven == 0
	retire := s>>genShift == genLast
	if retire {
		r.state.Store(genLast << genShift) // no reference: every handle to it is spent
	} else {
		r.state.Store((s>>genShift + 1) << genShift) // every handle to it is spent
	}
	r.handler, r.h, r.data, r.resp, r.status = nil, proto.ReqHandle{}, nil, nil, 0
	r.peer, r.dl, r.hasDL, r.md, r.stats, r.queue = netip.AddrPort{}, time.Time{}, false, nil, nil, 0
	r.badMeta = false // else the next request in this memory, with no metadata, is refused as malformed
	r.ctx.Store(nil)
	r.canceled.Store(false)
	r.respMeta.Store(nil)
	r.respFlags = 0
	if recycleOut {
		ep.eng.Recycle(r.out)
	}
	r.out, r.outSent = nil, false
	if retire {
		return
	}
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
	r.state.Add(2 * refOne) // the handler's run and the answer
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
	r.auth = ep.peerAuthFor(h.Session())
	if d, ok := h.Deadline(); ok {
		r.dl, r.hasDL = ep.wallTime(d), true
	}
	if h.HasMetadata() {
		r.md, r.data, r.badMeta = parseRequestMetadata(r.data)
		if r.badMeta {
			ep.eng.CountMalformedMetadata()
		}
	}
	if sh := ep.opts.stats; sh != nil {
		r.start = time.Now()
		r.stats = ep.beginServed(sh, now, r)
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
	if r.status == 0 && !proto.Within(resp, r.data) {
		hint = len(resp) // response memory, not an echo
	}
	ep.workers.answered(r)
	err := ep.eng.RespondFlags(now, r.h, r.status, resp, r.respFlags)
	if errors.Is(err, proto.ErrMsgTooLarge) {
		msg := fmt.Sprintf("method %q: the handler's response of %d bytes is larger than the session's maximum", r.handler.name, len(resp))
		var size *proto.SizeError
		if errors.As(err, &size) {
			msg += fmt.Sprintf(" of %d bytes (WithMaxMessageSize, the smaller of the two ends')", size.Max)
		}
		if r.respFlags != 0 {
			msg += " (its headers and trailers included)"
		}
		gave = false
		err = ep.eng.Respond(now, r.h, uint8(Internal), []byte(msg))
	}
	if err != nil && !errors.Is(err, proto.ErrRequestGone) {
		ep.log.Error("erpc: dropping response", "method", r.handler.name, "err", err)
	}
	r.outSent = gave && err == nil // the engine keeps it now
	ep.loop.respHint[r.handler.idx] = hint
	if sh := ep.opts.stats; sh != nil {
		ep.endAnswered(sh, r, len(resp))
		return
	}
	r.end(context.Canceled)
	r.release(true)
}

// endAnswered ends answered request r and tells sh, as the last step (see
// endServed): a function of its own, so that an endpoint without a
// StatsHandler builds no servedEnd per answer.
func (ep *Endpoint) endAnswered(sh StatsHandler, r *request, respBytes int) {
	st := servedEndOf(r, respBytes)
	r.end(context.Canceled)
	r.release(true)
	ep.endServed(sh, st.ctx, st.info, st.end)
}

// servedEnd is what the StatsHandler's CallEnd is told of a served call,
// read from its request before the request is released.
type servedEnd struct {
	ctx  context.Context
	info CallInfo
	end  CallEnd
}

// servedEndOf is the end of r's call, answered with respBytes.
func servedEndOf(r *request, respBytes int) servedEnd {
	end := CallEnd{Code: Code(r.status), RespBytes: respBytes, Duration: time.Since(r.start)}
	if end.Code != OK {
		msg, details := decodeErrorPayload(r.answerMessage())
		end.Err = &Error{Code: end.Code, Msg: msg, Details: details}
		end.RespBytes = 0
	}
	return servedEnd{r.stats, CallInfo{Method: r.handler.name, Server: true, Peer: r.peer, Start: r.start, ReqBytes: len(r.data)}, end}
}
