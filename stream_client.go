package erpc

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/stream"
)

// clientStream is a stream a client opened. The loop and the
// application's goroutines share it under mu; cs and sid are the loop's.
type clientStream struct {
	sess    *Session
	cs      *cliSession
	sid     proto.SessionID // the engine session it was opened on
	id      uint64
	method  string
	ctx     context.Context
	stopCtx func() bool
	kick    func()
	maxMsg  int
	opening atomic.Int32 // openWaiting, openDone or openAbandoned

	mu         sync.Mutex
	send       stream.Sender
	recv       stream.Receiver
	out        []byte // frames for the server; those from outOff on are not yet in a request
	outOff     int    // how much of out requests already carried (see takeTurn)
	queued     bool   // a kick is on its way, or the stream is in its session's queue
	outUse     outUse // what out held: whether to keep it
	cancelOut  Code   // a Cancel frame with this code is due (Canceled or DeadlineExceeded)
	header     Metadata
	gotHeader  bool
	headerDone chan struct{} // closed when the header came or the stream ended
	trailer    Metadata
	status     error // the handler's status, once its End came: io.EOF for OK
	gotEnd     bool
	over       error // the stream ended here (canceled, session lost): Send and Recv fail with it
	closedSend bool
	sendWait   bool
	recvWait   bool
	sendWake   chan struct{}
	recvWake   chan struct{}
}

const (
	openWaiting int32 = iota
	openDone
	openAbandoned
)

// NewStream opens a stream to method on the session's server and returns
// once the server has started its handler (or refused: Unimplemented
// for a method it does not have). ctx is the stream's: its metadata
// (NewOutgoingContext) and deadline reach the handler, and its end
// cancels the stream on both sides. Cancel ctx once done with a stream
// that may not have ended, as with any call. Stream client interceptors
// (WithStreamClientInterceptors) see the opening.
func (s *Session) NewStream(ctx context.Context, method string, opts ...StreamOption) (ClientStream, error) {
	cfg := newStreamConfig(opts)
	open := func(ctx context.Context, method string) (ClientStream, error) { return s.openStream(ctx, method, cfg) }
	if is := s.ep.opts.streamInterceptors; len(is) > 0 {
		return s.openIntercepted(ctx, is, method, open)
	}
	return open(ctx, method)
}

func (s *Session) openStream(ctx context.Context, method string, cfg streamConfig) (ClientStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, notRun(streamError(method, s.target, contextError(ctx)))
	}
	if s.calledOnLoop() {
		return nil, notRun(errOnLoop("NewStream", "open streams from another goroutine"))
	}
	ep := s.ep
	if w := sessionWindow(ep); w < minStreamWindow {
		return nil, notRun(streamError(method, s.target, errSmallWindow("client", w)))
	}
	maxMsg := maxStreamMessage(ep)
	st := &clientStream{sess: s, id: ep.streams.nextID.Add(1), method: method, ctx: ctx, maxMsg: maxMsg,
		recv:       stream.NewReceiver(cfg.msgs, cfg.bytes, maxMsg),
		headerDone: make(chan struct{}), sendWake: make(chan struct{}, 1), recvWake: make(chan struct{}, 1)}
	st.kick = st.onKick
	opened := make(chan error, 1)
	req := appendOpen(nil, st.id, cfg, method)
	c := getCall(s, streamOpenMethod, req, nil)
	if md, ok := ctx.Value(outgoingKey{}).(Metadata); ok {
		c.req, c.meta = withMetadata(md, req)
	}
	if d, ok := ctx.Deadline(); ok {
		c.deadline = proto.Time(d.Sub(ep.start))
	}
	c.state.Store(callTaken)
	c.cont = func(resp []byte, err error) { opened <- st.onOpened(resp, err) }
	_ = ep.Post(st.onOpening) // before the call, in the loop's order: a closed endpoint fails the call too
	ep.post(command{kind: cmdCall, call: c})
	select {
	case err := <-opened:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		if st.opening.CompareAndSwap(openWaiting, openAbandoned) {
			return nil, streamError(method, s.target, contextError(ctx)) // onOpened cancels it, if it opens
		}
		if err := <-opened; err != nil {
			return nil, err
		}
	}
	st.stopCtx = context.AfterFunc(ctx, st.onContextDone)
	return st, nil
}

// onOpening makes the stream known to the endpoint's stream hub (on the
// loop) while its opening is out: the handler's first frames may come
// before the opening's answer (see deliver).
func (st *clientStream) onOpening() {
	h := &st.sess.ep.streams
	if h.opening == nil {
		h.opening = map[uint64]*clientStream{}
	}
	h.opening[st.id] = st
}

// onOpened settles the opening (on the loop): the stream joins its
// session's streams, and the parked request is made if it was not.
func (st *clientStream) onOpened(resp []byte, err error) error {
	s := st.sess
	if err != nil {
		// On the loop, unless the endpoint closed (then it is gone).
		_ = s.ep.Post(func() { delete(s.ep.streams.opening, st.id) })
		e, _ := err.(*Error)
		if e == nil {
			e = &Error{Code: CodeOf(err), Msg: err.Error(), Cause: err}
		}
		if e.Code == Unimplemented && strings.Contains(e.Msg, streamOpenMethod) {
			c := *e
			c.Msg = "the server serves no streams" // not erpc's internal method's name
			e = &c
		}
		return streamError(st.method, s.target, e)
	}
	msgs, bytes, sessWindow, ok := parseWindow(resp)
	if !ok {
		return streamError(st.method, s.target, &Error{Code: Internal, Msg: "malformed answer to a stream's opening"})
	}
	st.send = stream.NewSender(min(msgs, maxStreamMsgs), min(bytes, maxStreamBytes)) // as a server caps a client's
	h := &s.ep.streams
	cs := h.client(s)
	if w := int(min(sessWindow, 1<<15)); w > 0 { // the server's caps ours
		cs.slots = slotsFor(min(w, sessionWindow(s.ep)))
	}
	st.cs, st.sid = cs, s.sid                                     // the session that answered is the current one: its end comes after this
	st.maxMsg = min(st.maxMsg, sessionStreamMessage(s.ep, s.sid)) // before NewStream returns: Send sees it
	delete(h.opening, st.id)
	cs.add(st)
	st.mu.Lock()
	over := st.settledLocked() // its frames came first, all of them
	st.mu.Unlock()
	if over {
		cs.drop(st.id)
	}
	if h.cliSid == nil {
		h.cliSid = map[proto.SessionID]*cliSession{}
	}
	h.cliSid[s.sid] = cs
	if !st.opening.CompareAndSwap(openWaiting, openDone) {
		st.cancelWith(&Error{Code: Canceled, Msg: "canceled while opening"}, Canceled)
	}
	cs.pump()
	return nil
}

func (st *clientStream) Context() context.Context { return st.ctx }
func (st *clientStream) Method() string           { return st.method }

func (st *clientStream) Send(msg []byte) error {
	if len(msg) > st.maxMsg {
		return streamError(st.method, st.sess.target, &Error{Code: InvalidArgument,
			Msg: fmt.Sprintf("a message of %d bytes is larger than the maximum of %d (WithMaxMessageSize, the smaller of the two ends', less a frame's header)", len(msg), st.maxMsg)})
	}
	st.mu.Lock()
	for st.sendable() && !st.send.CanSend() {
		st.sendWait = true
		st.mu.Unlock()
		<-st.sendWake
		st.mu.Lock()
	}
	st.sendWait = false
	switch {
	case st.over != nil:
		err := st.over
		st.mu.Unlock()
		return err
	case st.gotEnd:
		st.mu.Unlock()
		return io.EOF // the handler ended the stream: Recv has its status
	case st.closedSend:
		st.mu.Unlock()
		return &Error{Code: FailedPrecondition, Msg: "Send after CloseSend"}
	}
	st.out = stream.AppendData(st.outUse.grow(st.out, len(msg)+stream.DataOverhead), st.id, st.send.Sent(len(msg)), msg)
	kick := st.queueLocked()
	st.mu.Unlock()
	st.post(kick)
	return nil
}

// sendable: Send may go on waiting for credit.
func (st *clientStream) sendable() bool { return st.over == nil && !st.gotEnd && !st.closedSend }

func (st *clientStream) CloseSend() error {
	st.mu.Lock()
	if !st.sendable() {
		st.mu.Unlock()
		return nil
	}
	st.closedSend = true
	st.out = stream.AppendClose(st.out, st.id, st.send.Close())
	kick := st.queueLocked()
	st.mu.Unlock()
	st.post(kick)
	return nil
}

func (st *clientStream) Recv() ([]byte, error) {
	st.mu.Lock()
	for {
		if st.gotHeader {
			if msg, ok := st.recv.Next(); ok {
				kick := st.recv.GrantDue() && st.over == nil && st.queueLocked()
				st.mu.Unlock()
				st.post(kick)
				return msg, nil
			}
		}
		switch {
		case st.gotHeader && st.gotEnd && st.recv.Done(): // the header first, always (it may come after the End)
			err := st.status
			st.mu.Unlock()
			st.stopCtx()
			return nil, err
		case st.over != nil:
			err := st.over
			st.mu.Unlock()
			return nil, err
		}
		st.recvWait = true
		st.mu.Unlock()
		<-st.recvWake
		st.mu.Lock()
		st.recvWait = false
	}
}

func (st *clientStream) Header() (Metadata, error) {
	<-st.headerDone
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.gotHeader {
		return st.header, nil
	}
	return nil, st.over
}

func (st *clientStream) Trailer() Metadata {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.trailer
}

func (st *clientStream) queueLocked() bool {
	if st.queued || st.cs == nil {
		return false
	}
	st.queued = true
	return true
}

func (st *clientStream) post(kick bool) {
	if kick {
		_ = st.sess.ep.Post(st.kick) // a closed endpoint has failed the stream already
	}
}

// endLocked ends the stream here with err: Send and Recv fail with it
// (Recv once it has given what arrived before).
func (st *clientStream) endLocked(err error) {
	if st.over != nil || (st.gotHeader && st.gotEnd && st.recv.Done()) {
		return
	}
	st.over = err
	if st.sendWait {
		wake(st.sendWake)
	}
	if st.recvWait {
		wake(st.recvWake)
	}
	if !st.gotHeader {
		close(st.headerDone)
	}
}

// onContextDone cancels the stream when its context ends.
func (st *clientStream) onContextDone() {
	e := streamError(st.method, st.sess.target, contextError(st.ctx))
	st.cancelWith(e, e.Code)
}

// cancelWith ends the stream here with err and tells the server, unless
// the stream is over already.
func (st *clientStream) cancelWith(err *Error, code Code) {
	st.mu.Lock()
	if st.over != nil || (st.gotEnd && st.gotHeader) { // an End without its Header yet waits for it: a cancel ends that wait
		st.mu.Unlock()
		return
	}
	st.endLocked(err)
	st.cancelOut = code
	st.out, st.outOff = st.out[:0], 0
	kick := st.cs != nil
	st.queued = kick
	st.mu.Unlock()
	st.post(kick) // even if queued: a cancel does not wait behind other output
}
