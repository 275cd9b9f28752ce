package erpc

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/erpc-go/erpc/internal/stream"
)

// The server's side of the internal methods. Both run inline on the loop
// and only move frames between requests and the streams' buffers.
//
// An open request is the stream's ID (chosen by the client, unique on
// its session), the client's receive window (messages, bytes), then the
// method name; the request's own metadata and deadline are the stream's.
// Its answer is the handler's receive window (messages, bytes) and the
// server's session window (WithWindow, which caps the client's). An
// exchange request is a flags byte (flagPark: the server may hold it
// until it has output) then a batch of frames; its answer is a batch of
// frames.

const flagPark = 1

func appendOpen(b []byte, id uint64, cfg streamConfig, method string) []byte {
	b = binary.AppendUvarint(b, id)
	b = binary.AppendUvarint(b, uint64(cfg.msgs))
	b = binary.AppendUvarint(b, uint64(cfg.bytes))
	return append(b, method...)
}

func parseOpen(b []byte) (id, msgs, bytes uint64, method []byte, ok bool) {
	var n [3]uint64
	for i := range n {
		v, l := binary.Uvarint(b)
		if l <= 0 {
			return 0, 0, 0, nil, false
		}
		n[i], b = v, b[l:]
	}
	return n[0], n[1], n[2], b, true
}

// parseWindow reads an open's answer (messages, bytes, then the
// server's session window, which a server that does not send it leaves
// at 0: unknown).
func parseWindow(b []byte) (msgs, bytes, sessWindow uint64, ok bool) {
	msgs, l := binary.Uvarint(b)
	if l <= 0 {
		return 0, 0, 0, false
	}
	bytes, l2 := binary.Uvarint(b[l:])
	if l2 <= 0 {
		return 0, 0, 0, false
	}
	if w, l3 := binary.Uvarint(b[l+l2:]); l3 > 0 {
		sessWindow = w
	}
	return msgs, bytes, sessWindow, msgs > 0 && bytes > 0
}

// errSmallWindow refuses a stream on a session whose window (WithWindow,
// on the side named) is too small for one.
func errSmallWindow(side string, w int) *Error {
	return &Error{Code: FailedPrecondition, Msg: fmt.Sprintf(
		"streams need a session window of at least %d requests, and the %s's WithWindow is %d", minStreamWindow, side, w)}
}

// serveStreamOpen starts a stream: at most once per open request, which
// erpc runs at most once.
func serveStreamOpen(q Request) {
	r := q.r
	ep := r.ep
	id, msgs, bytes, method, ok := parseOpen(r.data)
	hd := ep.server.streamHandlerFor(method)
	switch {
	case !ok || msgs == 0 || bytes == 0:
		ep.streams.refuse()
		q.RespondError(&Error{Code: InvalidArgument, Msg: "malformed stream open"})
		return
	case hd == nil:
		q.RespondError(&Error{Code: Unimplemented, Msg: fmt.Sprintf("the server has no stream method %q", method)})
		return
	case sessionWindow(ep) < minStreamWindow: // it caps the client's
		q.RespondError(errSmallWindow("server", sessionWindow(ep)))
		return
	}
	ss := ep.streams.server(ep, r.h.Session(), true)
	switch {
	case ss.streams[id] != nil:
		ep.streams.refuse()
		q.RespondError(&Error{Code: AlreadyExists, Msg: fmt.Sprintf("stream %d is open already", id)})
		return
	case len(ss.streams) >= maxStreamsPerSession:
		q.RespondError(&Error{Code: ResourceExhausted, Msg: fmt.Sprintf(
			"the session has %d streams open, the most a server allows", len(ss.streams))})
		return
	}
	st := newServerStream(ep, ss, id, hd, r, stream.NewSender(min(msgs, maxStreamMsgs), min(bytes, maxStreamBytes)))
	ss.streams[id] = st
	ep.streams.count.opened.Add(1)
	ep.streams.count.active.Add(1)
	var ans [3 * binary.MaxVarintLen64]byte
	b := binary.AppendUvarint(ans[:0], uint64(hd.cfg.msgs))
	b = binary.AppendUvarint(b, uint64(hd.cfg.bytes))
	q.Respond(binary.AppendUvarint(b, uint64(sessionWindow(ep))))
	go st.run()
}

// newServerStream makes the stream of open request r, with its context:
// the client's metadata, address and deadline. The context's watcher may
// run at once (a deadline already past): the stream is whole before.
func newServerStream(ep *Endpoint, ss *srvSession, id uint64, hd *streamHandler, r *request, send stream.Sender) *serverStream {
	st := &serverStream{ep: ep, ss: ss, id: id, hd: hd, maxMsg: sessionStreamMessage(ep, ss.sid), send: send,
		recv:     stream.NewReceiver(hd.cfg.msgs, hd.cfg.bytes, maxStreamMessage(ep)),
		sendWake: make(chan struct{}, 1), recvWake: make(chan struct{}, 1)}
	ctx := context.Context(callerCtx{context.Background(), r.md, r.peer, r.auth})
	st.stopDL = func() {}
	if r.hasDL {
		ctx, st.stopDL = context.WithDeadline(ctx, r.dl)
	}
	st.ctx, st.cancel = context.WithCancelCause(ctx)
	st.kick = st.onKick
	st.stopCtx = context.AfterFunc(st.ctx, st.onContextDone) // last: it may run at once
	return st
}

// serveStreamExchange takes a batch of frames from the client and answers
// with the session's output: at once if there is some or the client did
// not ask to park, else when some comes.
func serveStreamExchange(q Request) {
	r := q.r
	ep := r.ep
	if len(r.data) == 0 {
		ep.streams.refuse()
		q.RespondError(&Error{Code: InvalidArgument, Msg: "malformed stream exchange"})
		return
	}
	ss := ep.streams.server(ep, r.h.Session(), false)
	park := r.data[0]&flagPark != 0
	var rd stream.Reader
	rd.Reset(r.data[1:])
	var f stream.Frame
	for rd.Next(&f) {
		var st *serverStream
		if ss != nil {
			st = ss.streams[f.Stream]
		}
		if st == nil { // never opened, or over (a late frame)
			ep.streams.refuse()
			continue
		}
		st.onFrame(&f)
	}
	if rd.Err() != nil {
		ep.streams.refuse()
		q.RespondError(&Error{Code: InvalidArgument, Msg: "malformed stream frames"})
		return
	}
	switch {
	case ss == nil:
		q.Respond(nil)
	case len(ss.outq) > 0 || !park || len(ss.streams) == 0:
		ss.respond(q)
		ss.unparkIfIdle()
	default:
		if len(ss.parked) >= maxParked { // a client parks no more than that
			ep.streams.refuse()
			_ = ss.unpark().Respond(nil)
		}
		ss.parked = append(ss.parked, q)
		_ = ep.eng.Park(r.h) // waiting for output, not work: off WithMaxHeldRequests (it is live: its handler runs)
		r.data = nil         // its frames were taken: Park gave its memory back to the pool
	}
}

// onFrame applies a client's frame to the stream (on the loop). A frame
// the protocol forbids ends the stream with Internal.
func (st *serverStream) onFrame(f *stream.Frame) {
	var err error
	st.mu.Lock()
	switch f.Kind {
	case stream.KindData:
		if err = st.recv.Accept(f.Seq, f.Data); err == nil && st.recvWait {
			wake(st.recvWake)
		}
	case stream.KindClose:
		if err = st.recv.End(f.Seq); err == nil && st.recvWait {
			wake(st.recvWake)
		}
	case stream.KindGrant:
		if st.send.Grant(f.MsgLimit, f.ByteLimit) {
			st.ep.streams.refuse() // beyond the window the client announced: clamped to it
		}
		if st.sendWait {
			wake(st.sendWake)
		}
	case stream.KindCancel:
		st.mu.Unlock()
		st.clientCanceled(Code(f.Code))
		return
	default:
		err = stream.ErrMalformed
	}
	st.mu.Unlock()
	if err != nil {
		st.ep.streams.refuse()
		st.violation(err)
	}
}

// clientCanceled ends a stream the client canceled (on the loop).
func (st *serverStream) clientCanceled(code Code) {
	e := &Error{Code: Canceled, Msg: "the client canceled the stream", Cause: context.Canceled}
	if code == DeadlineExceeded {
		e = &Error{Code: DeadlineExceeded, Msg: "the client's deadline passed", Cause: context.DeadlineExceeded}
	}
	if ss := st.ss; ss != nil {
		delete(ss.streams, st.id)
	}
	st.abort(e)
}

// violation ends a stream whose client broke the protocol: the handler's
// context ends, and the client gets Internal.
func (st *serverStream) violation(cause error) {
	e := &Error{Code: Internal, Msg: "stream protocol violation by the client: " + cause.Error()}
	code, payload := streamStatus(e)
	st.mu.Lock()
	kick := false
	if !st.finished {
		st.finishLocked(code, payload)
		kick = st.queueLocked()
	}
	st.endLocked(e)
	st.mu.Unlock()
	st.cancel(e)
	if kick {
		st.onKick() // on the loop already
	}
}
