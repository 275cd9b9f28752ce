package erpc

import (
	"context"
	"errors"
	"sync"

	"github.com/erpc-go/erpc/internal/proto"
)

// call is one client call on its way through the loop. Calls are pooled:
// a blocking call allocates nothing once the pool is warm.
type call struct {
	sess   *Session
	method uint32
	req    []byte
	resp   []byte
	sid    proto.SessionID
	engID  proto.CallID
	done   chan struct{}                // signaled once, for blocking calls
	cont   func(resp []byte, err error) // for async calls, run on the loop
	err    error
	resent bool // sent again after its first session ended before it ran
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

func getCall(s *Session, method string, req, resp []byte) *call {
	c := callPool.Get().(*call)
	c.sess, c.method, c.req, c.resp = s, methodID(method), req, resp
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
// server is told to drop the request, and the call returns an error with
// code DeadlineExceeded or Canceled, for which errors.Is(err,
// context.DeadlineExceeded) (or context.Canceled) holds.
//
// The engine reads req until Call returns; do not modify it meanwhile.
func (s *Session) Call(ctx context.Context, method string, req, resp []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextError(ctx)
	}
	c := getCall(s, method, req, resp)
	s.ep.post(command{kind: cmdCall, call: c})
	select {
	case <-c.done:
	case <-ctx.Done():
		s.ep.post(command{kind: cmdCancel, call: c})
		<-c.done // the loop lets go of the buffers only then
		err := c.err
		if CodeOf(err) == Canceled {
			err = contextError(ctx)
		}
		// c is not recycled: the cancel command may still be queued and
		// must not find c reused by another call.
		return c.resp, err
	}
	resp, err := c.resp, c.err
	putCall(c)
	return resp, err
}

// Go sends req to method and returns at once; done runs on the endpoint's
// event loop when the call completes, with the response (in resp if it
// fit) or the error. done must not block: it may post more calls (nested
// calls) or respond to a request, but long work belongs on another
// goroutine. The engine holds req and resp until done runs.
func (s *Session) Go(method string, req, resp []byte, done func(resp []byte, err error)) {
	c := getCall(s, method, req, resp)
	c.cont = done
	s.ep.post(command{kind: cmdCall, call: c})
}

// startCall hands a posted call to the engine (on the loop).
func (ep *Endpoint) startCall(now proto.Time, c *call) {
	if ep.state.Load() != stateOpen {
		ep.finishOnLoop(c, nil, errClosed)
		return
	}
	sid, serr := c.sess.ensure(now)
	if serr != nil {
		ep.finishOnLoop(c, nil, serr)
		return
	}
	id, err := ep.eng.StartCall(now, sid, c.method, c.req, c.resp, proto.Never, c)
	if err != nil {
		ep.finishOnLoop(c, nil, engineError(err))
		return
	}
	c.sid, c.engID = sid, id
}

// completeCall settles the call an engine completion names.
func (ep *Endpoint) completeCall(now proto.Time, ev proto.Event) {
	c := ev.Tag.(*call)
	switch {
	case errors.Is(ev.Err, proto.ErrNotExecuted) && !c.resent && !c.sess.closed.Load():
		// The session ended (say, the server restarted) before the request
		// reached a live server: it never ran, so sending it again on a new
		// session keeps at-most-once. Once only, so a dead server fails it.
		c.resent = true
		c.sess.detach(c.sid, ev.Err)
		ep.startCall(now, c)
	case ev.Err != nil:
		ep.finishOnLoop(c, nil, engineError(ev.Err))
	case ev.Status != 0: // the handler answered with an error
		ep.finishOnLoop(c, nil, &Error{Code: Code(ev.Status), Msg: string(ev.Data)})
	default:
		ep.finishOnLoop(c, ev.Data, nil)
	}
}

// finishOnLoop completes c; an async call's continuation runs here.
func (ep *Endpoint) finishOnLoop(c *call, resp []byte, err error) {
	if c.cont == nil {
		c.finish(resp, err)
		ep.loop.thread.wokeGoroutine()
		return
	}
	cont := c.cont
	putCall(c)
	defer func() {
		if p := recover(); p != nil {
			ep.log.Error("erpc: call continuation panicked", "panic", p)
		}
	}()
	if err != nil {
		cont(nil, err)
	} else {
		cont(resp, nil)
	}
}

// finish records the outcome of a blocking call and wakes its caller.
func (c *call) finish(resp []byte, err error) {
	if c.cont != nil { // only after the loop stopped: run it here
		cont := c.cont
		putCall(c)
		cont(nil, err)
		return
	}
	c.resp, c.err = resp, err
	c.done <- struct{}{}
}
