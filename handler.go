package erpc

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/erpc-go/erpc/internal/proto"
)

// HandlerOption configures a handler.
type HandlerOption func(*handler)

// Background runs the handler on the endpoint's worker goroutines instead
// of inline on the event loop. Use it for handlers that take more than a few
// microseconds or block: an inline handler holds up every other call of the
// endpoint while it runs. Requests for background handlers wait in one
// bounded queue shared by all workers; when it is full they are refused at
// once with ResourceExhausted (see WithQueueDepth).
func Background() HandlerOption { return func(h *handler) { h.background = true } }

type handler struct {
	name       string
	background bool
	run        func(r *Request) // answers r, at once or later
}

// handlerTable maps method IDs to handlers. It is replaced, never changed,
// so the loop reads it without a lock.
type handlerTable struct {
	byID map[uint32]*handler
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
// goroutine. For a zero-allocation answer, fill ResponseBuffer and pass it
// to Respond.
func (ep *Endpoint) HandleRaw(method string, fn func(r *Request), opts ...HandlerOption) error {
	return ep.register(method, fn, opts)
}

// Handle registers a handler of raw bytes: it returns the response, or an
// error (an *Error keeps its code; any other error becomes Unknown). A
// panic becomes an Internal error and does not stop the endpoint. req is
// valid only until the handler returns.
func (ep *Endpoint) Handle(method string, fn func(ctx context.Context, req []byte) ([]byte, error), opts ...HandlerOption) error {
	return ep.register(method, func(r *Request) {
		resp, err := fn(r.Context(), r.Data())
		if err != nil {
			r.RespondError(err)
			return
		}
		r.Respond(resp)
	}, opts)
}

func (ep *Endpoint) register(method string, fn func(*Request), opts []HandlerOption) error {
	h := &handler{name: method, run: fn}
	for _, o := range opts {
		o(h)
	}
	ep.regMu.Lock()
	defer ep.regMu.Unlock()
	old := ep.handlers.Load()
	id := methodID(method)
	if prev := old.lookup(id); prev != nil {
		if prev.name == method {
			return fmt.Errorf("erpc: method %q registered twice", method)
		}
		return fmt.Errorf("erpc: methods %q and %q have the same ID %#x; rename one", prev.name, method, id)
	}
	t := &handlerTable{byID: make(map[uint32]*handler, len(old.byID)+1)}
	for k, v := range old.byID {
		t.byID[k] = v
	}
	t.byID[id] = h
	ep.handlers.Store(t)
	if h.background {
		ep.workers.start()
	}
	return nil
}

// Request is a request being served. A handler may keep it past its return
// and respond later, from any goroutine; once answered, the Request, its
// Data and its Context belong to the endpoint again and must not be used.
type Request struct {
	ep       *Endpoint
	h        proto.ReqHandle // touched on the loop only
	data     []byte          // captured on the loop, so workers never read engine state
	handler  *handler
	ctx      reqCtx
	inline   bool // running on the loop: ResponseBuffer may use slot memory
	answered atomic.Bool
	status   uint8
	resp     []byte
}

// Data is the request message, valid until the request is answered.
func (r *Request) Data() []byte { return r.data }

// Method is the name the handler was registered under.
func (r *Request) Method() string { return r.handler.name }

// Context is canceled when the client cancels the call, its session ends,
// or the endpoint closes.
func (r *Request) Context() context.Context { return &r.ctx }

// ResponseBuffer returns n bytes to build the response in. Inside an inline
// handler it is memory the endpoint reuses from one request to the next, so
// answering with it allocates nothing; elsewhere it is a new buffer.
func (r *Request) ResponseBuffer(n int) []byte {
	if r.inline {
		return r.ep.eng.Buffer(n)
	}
	return make([]byte, n)
}

// Respond answers the request with resp, which the endpoint owns from now
// on. Only the first answer counts; later ones return an error.
func (r *Request) Respond(resp []byte) error { return r.answer(0, resp) }

// RespondError answers the request with an error: an *Error keeps its code
// and message; any other error becomes Unknown with its message.
func (r *Request) RespondError(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: Unknown, Msg: err.Error()}
	}
	if e.Code == OK {
		e = &Error{Code: Unknown, Msg: e.Msg}
	}
	return r.answer(uint8(e.Code), []byte(e.Msg))
}

var errAnswered = errors.New("erpc: request already answered")

func (r *Request) answer(status uint8, resp []byte) error {
	if r.answered.Swap(true) {
		return errAnswered
	}
	r.status, r.resp = status, resp
	r.ep.post(command{kind: cmdRespond, req: r})
	return nil
}

// serve starts handling a request that arrived whole (on the loop).
func (ep *Endpoint) serve(now proto.Time, h proto.ReqHandle) {
	r := ep.getRequest(h)
	switch {
	case r.handler == nil:
		r.answer(uint8(Unimplemented), []byte(fmt.Sprintf("no handler for method id %#x", h.Type())))
	case ep.state.Load() != stateOpen:
		r.answer(uint8(Unavailable), []byte("server shutting down"))
	case r.handler.background:
		if !ep.workers.submit(r) {
			_ = ep.eng.Reject(now, h) // NACK: the client fails fast with ResourceExhausted
			ep.putRequest(r)
		} else {
			ep.loop.thread.wokeGoroutine()
		}
	default:
		r.inline = true
		ep.runHandler(r)
		r.inline = false
	}
}

// runHandler runs r's handler, turning a panic into an Internal error.
func (ep *Endpoint) runHandler(r *Request) {
	defer func() {
		if p := recover(); p != nil {
			ep.log.Error("erpc: handler panicked", "method", r.handler.name, "panic", p, "stack", string(debug.Stack()))
			r.answer(uint8(Internal), []byte(fmt.Sprintf("handler panicked: %v", p)))
		}
	}()
	r.handler.run(r)
}

// respond sends a request's answer (on the loop) and releases the request.
func (ep *Endpoint) respond(now proto.Time, r *Request) {
	err := ep.eng.Respond(now, r.h, r.status, r.resp)
	if errors.Is(err, proto.ErrMsgTooLarge) {
		msg := fmt.Sprintf("response of %d bytes is larger than the session allows", len(r.resp))
		err = ep.eng.Respond(now, r.h, uint8(Internal), []byte(msg))
	}
	if err != nil && !errors.Is(err, proto.ErrRequestGone) {
		ep.log.Error("erpc: dropping response", "method", r.handler.name, "err", err)
	}
	ep.putRequest(r)
}

func (ep *Endpoint) getRequest(h proto.ReqHandle) *Request {
	var r *Request
	if n := len(ep.loop.reqPool); n > 0 {
		r = ep.loop.reqPool[n-1]
		ep.loop.reqPool = ep.loop.reqPool[:n-1]
	} else {
		r = &Request{ep: ep}
	}
	r.h = h
	r.data = h.Data()
	r.handler = ep.handlers.Load().lookup(h.Type())
	r.ctx.reset()
	r.answered.Store(false)
	h.SetTag(r)
	return r
}

func (ep *Endpoint) putRequest(r *Request) {
	r.h, r.data, r.handler, r.resp, r.status = proto.ReqHandle{}, nil, nil, nil, 0
	ep.loop.reqPool = append(ep.loop.reqPool, r)
}
