package erpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"

	"github.com/erpc-go/erpc/internal/stream"
)

// serverStream is a stream its handler serves. The loop and the handler's
// goroutine share it under mu (a stream's own lock, held for a few
// hundred nanoseconds at a time); the loop alone touches ss and the
// session's queue.
type serverStream struct {
	ep      *Endpoint
	ss      *srvSession // the loop's
	id      uint64
	hd      *streamHandler
	ctx     context.Context
	cancel  context.CancelCauseFunc
	stopCtx func() bool
	stopDL  context.CancelFunc // the deadline's timer
	kick    func()             // queues the stream's output on the loop: bound once
	maxMsg  int

	mu        sync.Mutex
	send      stream.Sender
	recv      stream.Receiver
	out       []byte // frames for the client; those from outOff on are not yet in an answer
	outOff    int    // how much of out answers already carried (see take)
	queued    bool   // a kick is on its way, or the stream is in its session's queue
	outUse    outUse // what out held: whether to keep it
	header    Metadata
	headerOut bool // the header frame is in out, or went
	trailer   Metadata
	over      error // why Send and Recv fail: the stream is over for the handler
	finished  bool  // the End frame is in out: nothing more is added
	sendWait  bool
	recvWait  bool
	sendWake  chan struct{}
	recvWake  chan struct{}
}

func (st *serverStream) Context() context.Context { return st.ctx }
func (st *serverStream) Method() string           { return st.hd.name }

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// errStreamReturned is what Send and Recv give once the handler returned
// (to goroutines it left behind).
var errStreamReturned = &Error{Code: FailedPrecondition, Msg: "the stream's handler has returned"}

func (st *serverStream) Send(msg []byte) error {
	if len(msg) > st.maxMsg {
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("stream %q: a message of %d bytes is larger than the maximum of %d (WithMaxMessageSize, the smaller of the two ends', less a frame's header)",
			st.hd.name, len(msg), st.maxMsg)}
	}
	st.mu.Lock()
	for st.over == nil && !st.send.CanSend() {
		st.sendWait = true
		st.mu.Unlock()
		<-st.sendWake
		st.mu.Lock()
	}
	st.sendWait = false
	if err := st.over; err != nil {
		st.mu.Unlock()
		<-st.ctx.Done() // its ender cancels it next (endLocked)
		return err
	}
	st.headerLocked()
	st.out = stream.AppendData(st.outUse.grow(st.out, len(msg)+stream.DataOverhead), st.id, st.send.Sent(len(msg)), msg)
	kick := st.queueLocked()
	st.mu.Unlock()
	st.post(kick)
	return nil
}

func (st *serverStream) Recv() ([]byte, error) {
	st.mu.Lock()
	for {
		if msg, ok := st.recv.Next(); ok {
			kick := st.recv.GrantDue() && st.queueLocked()
			st.mu.Unlock()
			st.post(kick)
			return msg, nil
		}
		switch {
		case st.recv.Done():
			st.mu.Unlock()
			return nil, io.EOF
		case st.over != nil:
			err := st.over
			st.mu.Unlock()
			<-st.ctx.Done() // its ender cancels it next (endLocked)
			return nil, err
		}
		st.recvWait = true
		st.mu.Unlock()
		<-st.recvWake
		st.mu.Lock()
		st.recvWait = false
	}
}

func (st *serverStream) SetHeader(md Metadata) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.headerOut {
		return &Error{Code: FailedPrecondition, Msg: "SetHeader after the header was sent"}
	}
	if err := st.headerFits(md); err != nil {
		return err
	}
	st.header = mergeMetadata(st.header, md)
	return nil
}

func (st *serverStream) SendHeader(md Metadata) error {
	st.mu.Lock()
	if st.headerOut || st.finished {
		st.mu.Unlock()
		return &Error{Code: FailedPrecondition, Msg: "SendHeader after the header was sent"}
	}
	if err := st.headerFits(md); err != nil {
		st.mu.Unlock()
		return err
	}
	st.header = mergeMetadata(st.header, md)
	st.headerLocked()
	kick := st.queueLocked()
	st.mu.Unlock()
	st.post(kick)
	return nil
}

func (st *serverStream) SetTrailer(md Metadata) {
	st.mu.Lock()
	st.trailer = mergeMetadata(st.trailer, md)
	st.mu.Unlock()
}

func mergeMetadata(dst, md Metadata) Metadata {
	if len(md) == 0 {
		return dst
	}
	if dst == nil {
		dst = Metadata{}
	}
	for k, vs := range md {
		dst[k] = append(dst[k], vs...)
	}
	return dst
}

// headerLocked puts the header frame in out if it is not there yet: it
// goes before the first message or the end, always.
func (st *serverStream) headerLocked() {
	if !st.headerOut {
		st.headerOut = true
		st.out = stream.AppendHeader(st.out, st.id, metadataBlock(st.header))
	}
}

// metadataBlock encodes md as a metadata block (empty for none).
func metadataBlock(md Metadata) []byte {
	b, _ := withMetadata(md, nil)
	return b
}

// queueLocked marks the stream as having output for the loop; true if
// the caller must post the kick that tells the loop.
func (st *serverStream) queueLocked() bool {
	if st.queued || st.ss == nil {
		return false
	}
	st.queued = true
	return true
}

func (st *serverStream) post(kick bool) {
	if kick {
		_ = st.ep.Post(st.kick) // a closed endpoint has ended the stream already
	}
}

// endLocked ends the stream for the handler with err and wakes it.
// Whoever ends a stream cancels its context right after (Send
// and Recv wait for that before they fail, so that a handler they fail
// finds its context done, whatever ended the stream).
func (st *serverStream) endLocked(err error) {
	if st.over == nil {
		st.over = err
	}
	if st.sendWait {
		wake(st.sendWake)
	}
	if st.recvWait {
		wake(st.recvWake)
	}
}

// run serves the stream on its own goroutine, then sends its status.
func (st *serverStream) run() {
	defer st.ep.streams.count.active.Add(^uint64(0))
	err := st.call()
	st.finish(err)
	st.cancel(errStreamReturned)
	st.stopCtx()
	st.stopDL()
}

// call runs the interceptors and the handler; a panic becomes Internal.
func (st *serverStream) call() (err error) {
	defer func() {
		if p := recover(); p != nil {
			st.ep.log.Error(fmt.Sprintf("erpc: stream handler %q panicked: %v\n%s", st.hd.name, p, debug.Stack()),
				"method", st.hd.name, "panic", fmt.Sprint(p))
			err = Errorf(Internal, "handler panicked: %v", p)
		}
	}()
	if icpt := st.ep.server.streamIntercept; icpt != nil {
		return icpt(st, &StreamServerInfo{Method: st.hd.name}, st.hd.fn)
	}
	return st.hd.fn(st)
}

// finish puts the End frame, with the handler's status and trailers, in
// out; nothing, if the stream was already over on the client's side.
func (st *serverStream) finish(err error) {
	code, payload := streamStatus(err)
	st.mu.Lock()
	if st.finished || st.ss == nil {
		st.endLocked(errStreamReturned)
		st.mu.Unlock()
		return
	}
	st.finishLocked(code, payload)
	st.endLocked(errStreamReturned)
	kick := st.queueLocked()
	st.mu.Unlock()
	st.post(kick)
}

func (st *serverStream) finishLocked(code Code, payload []byte) {
	st.headerLocked()
	code, payload, trailer := st.endFitting(code, payload, metadataBlock(st.trailer))
	st.out = stream.AppendEnd(st.out, st.id, st.send.Close(), uint8(code), payload, trailer)
	st.finished = true
}

// streamStatus is the code and payload a handler's error travels as (as
// RespondError sends a unary one).
func streamStatus(err error) (Code, []byte) {
	if err == nil {
		return OK, nil
	}
	e := statusOf(err) // a gRPC status keeps its message and details, as on a unary call
	code := e.Code
	if code == OK {
		code = Unknown
	}
	if details, marked := withoutServerMarks(e.Details); marked {
		c := *e
		c.Details = details
		e = &c
	}
	return code, encodeErrorPayload(e)
}

// onContextDone ends the stream for the handler when its context ends
// (the deadline, the client's cancel, the session's end).
func (st *serverStream) onContextDone() {
	err := contextError(st.ctx)
	if errors.Is(context.Cause(st.ctx), errStreamReturned) {
		return
	}
	if e, ok := context.Cause(st.ctx).(*Error); ok {
		err = e
	}
	st.mu.Lock()
	st.endLocked(err)
	kick := false
	if CodeOf(err) == DeadlineExceeded && !st.finished && st.ss != nil {
		// The deadline ends the stream on the client's side too, now,
		// whether or not the handler returns soon.
		code, payload := streamStatus(err)
		st.finishLocked(code, payload)
		kick = st.queueLocked()
	}
	st.mu.Unlock()
	st.post(kick)
}
