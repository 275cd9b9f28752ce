package erpc

import (
	"context"
	"io"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/stream"
)

// cliSession is the client side of a session's streams (the loop's): the
// open streams, the ones with output for the server, and the requests
// that carry it. Exchange requests stay parked at the server while the
// session has streams (the server answers one when it has output for any
// of them), and up to slots.uplinks more carry the client's output.
type cliSession struct {
	s       *Session
	streams map[uint64]*clientStream
	outq    []*clientStream
	slots   streamSlots
	parked  int // parked exchanges out
	uplinks int // other exchanges out
	free    []*exchange
}

// maxParked is the most exchanges a session keeps parked at the server:
// two, so that the server can answer one while the answer to the other
// is on its way. maxUplinks bounds the exchanges out besides them. With
// them, streams use at most four of the session's request slots (8 by
// default, WithWindow), however many streams there are, and unary calls
// keep the rest.
const (
	maxParked  = 2
	maxUplinks = 2
)

// streamSlots is how many exchanges a session parks, and sends besides,
// for a session window of w requests (WithWindow, the smaller of the
// client's and the server's). Parked exchanges hold their slots until
// the server has output, so they must leave at least one slot free, or
// the client's own messages (and its unary calls) would wait behind them
// forever: at most w-1 parked, and w-2 where that still parks one (a
// slot each for the client's output and for unary calls). A window of
// 1 leaves none: NewStream refuses (minStreamWindow).
type streamSlots struct{ parked, uplinks int }

func slotsFor(w int) streamSlots {
	p := min(max(w-2, 1), maxParked)
	return streamSlots{parked: p, uplinks: min(max(w-1-p, 1), maxUplinks)}
}

// minStreamWindow is the smallest session window streams work with.
const minStreamWindow = 2

// sessionWindow is the endpoint's own session window (WithWindow, with
// the engine's default of 8 and its cap of 32768).
func sessionWindow(ep *Endpoint) int {
	w := ep.opts.engine.Window
	if w <= 0 {
		w = 8
	}
	return min(w, 1<<15)
}

// exchange is one exchange request and its buffers, reused.
type exchange struct {
	cs        *cliSession
	req, resp []byte
	park      bool
	tries     int                          // refusals by a full server in a row
	done      func(resp []byte, err error) // bound once
	resend    func()                       // bound once
}

// maxRefusals is how many times in a row an exchange a full server
// refused (a NACK: it never ran) is sent again, after 2, 4... 256 ms,
// before the session's streams fail with ResourceExhausted.
const maxRefusals = 8

func (h *streamHub) client(s *Session) *cliSession {
	cs := h.cli[s]
	if cs == nil {
		if h.cli == nil {
			h.cli = map[*Session]*cliSession{}
		}
		cs = &cliSession{s: s, streams: map[uint64]*clientStream{}, slots: slotsFor(sessionWindow(s.ep))}
		h.cli[s] = cs
	}
	return cs
}

// onKick queues st's output (on the loop).
func (st *clientStream) onKick() {
	cs := st.cs
	st.mu.Lock()
	urgent := st.cancelOut != 0
	st.mu.Unlock()
	cs.outq = append(cs.outq, st)
	if urgent { // a cancel waits neither behind other output nor for a slot:
		// it reaches the handler within half a round trip
		copy(cs.outq[1:], cs.outq)
		cs.outq[0] = st
		if cs.uplinks >= cs.slots.uplinks {
			cs.send(false)
		}
	}
	cs.pump()
}

// pump sends the queued output, and parks an exchange if the session has
// streams and none is parked.
func (cs *cliSession) pump() {
	for len(cs.outq) > 0 && cs.uplinks < cs.slots.uplinks {
		cs.send(false)
	}
	for cs.parked < cs.slots.parked && len(cs.streams) > 0 {
		cs.send(true)
	}
}

// send makes one exchange with as much queued output as a batch holds.
func (cs *cliSession) send(park bool) {
	x := cs.getExchange()
	x.park = park
	b := append(x.req[:0], 0)
	if park {
		b[0] = flagPark
		cs.parked++
	} else {
		cs.uplinks++
	}
	x.req = cs.fill(b, streamBatch(cs.s.ep, cs.s.sid))
	cs.s.Go(streamXchgMethod, x.req, x.resp, x.done)
}

func (cs *cliSession) getExchange() *exchange {
	if n := len(cs.free); n > 0 {
		x := cs.free[n-1]
		cs.free = cs.free[:n-1]
		return x
	}
	x := &exchange{cs: cs}
	x.done = x.complete
	x.resend = func() { cs.s.Go(streamXchgMethod, x.req, x.resp, x.done) }
	return x
}

// fill moves queued output into the request b (its flag byte written),
// within max bytes, a turn per stream (takeTurns).
func (cs *cliSession) fill(b []byte, max int) []byte {
	b, cs.outq = takeTurns(cs.outq, b, 1, max)
	return b
}

// takeTurn moves up to a turn of st's output to the request b (see
// turnTaker; a cancel goes alone, at once).
func (st *clientStream) takeTurn(b []byte, start, max, turn int) (_ []byte, more, fits bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	first := len(b) == start
	if !first && max-len(b) < grantRoom { // no room for a Cancel or Grant: the next batch
		return b, true, false
	}
	if st.cancelOut != 0 {
		b = stream.AppendCancel(b, st.id, uint8(st.cancelOut))
		st.cancelOut = 0
		st.queued = false
		st.out, st.outOff = st.out[:0], 0
		st.cs.drop(st.id)
		return b, false, true
	}
	if st.over == nil && st.recv.GrantDue() {
		m, n := st.recv.TakeGrant()
		b = stream.AppendGrant(b, st.id, m, n)
	}
	out, n := st.out[st.outOff:], 0
	if len(out) > 0 {
		if n = turnCut(out, max-len(b), turn, first); n == 0 {
			return b, true, false
		}
	}
	b = append(b, out[:n]...)
	before := len(out)
	if n < len(out) { // the rest stays put until it is no larger than what went (as a serverStream's)
		st.outOff += n
		if rest := len(st.out) - st.outOff; st.outOff >= rest {
			st.out, st.outOff = st.out[:copy(st.out, st.out[st.outOff:])], 0
		}
		st.outUse.saw(before)
		return b, true, true
	}
	st.out, st.outOff = st.outUse.drained(st.out[:0], before), 0
	st.queued = false
	return b, false, true
}

// complete takes an exchange's answer (on the loop).
func (x *exchange) complete(resp []byte, err error) {
	cs := x.cs
	if err != nil && x.retry(err) {
		return
	}
	x.tries = 0
	if x.park {
		cs.parked--
	} else {
		cs.uplinks--
	}
	if resp != nil {
		x.resp = resp[:0]
	}
	if err != nil {
		e, _ := err.(*Error)
		if e == nil {
			e = &Error{Code: CodeOf(err), Msg: err.Error(), Cause: err}
		}
		cs.failAll(e)
	} else {
		cs.deliver(resp)
	}
	if len(cs.streams) == 0 && cap(x.req)+cap(x.resp) > keptExchangeBytes {
		x.req, x.resp = nil, nil // an idle session keeps no batch-sized buffers
	}
	cs.free = append(cs.free, x)
	cs.pump()
}

// keptExchangeBytes is the most an exchange keeps, for its next use, of
// the buffers a session with no stream left used.
const keptExchangeBytes = 64 << 10

// retry sends again, after a backoff, an exchange a full server refused
// before running it (its frames are neither lost nor delivered twice).
func (x *exchange) retry(err error) bool {
	if !NotExecuted(err) || CodeOf(err) != ResourceExhausted || x.tries >= maxRefusals || x.cs.s.closed.Load() {
		return false
	}
	x.tries++
	ep := x.cs.s.ep
	time.AfterFunc(time.Millisecond<<x.tries, func() { _ = ep.Post(x.resend) }) // a closed endpoint failed the streams
	return true
}

// deliver applies the server's frames to the streams they name.
func (cs *cliSession) deliver(batch []byte) {
	var rd stream.Reader
	rd.Reset(batch)
	var f stream.Frame
	for rd.Next(&f) {
		st := cs.streams[f.Stream]
		if st == nil {
			// A handler may send at once, in the answer to an exchange
			// parked for the session's other streams, which can come
			// before the answer to the stream's opening: the stream
			// takes them now (onOpened drops it if they were all).
			if st = cs.opening(f.Stream); st == nil { // canceled here meanwhile
				continue
			}
		}
		if st.onFrame(&f) {
			cs.drop(st.id)
		}
	}
	if rd.Err() != nil {
		cs.failAll(&Error{Code: Internal, Msg: "malformed stream frames from the server"})
	}
}

// opening is the session's stream of ID id whose opening is out, if any.
func (cs *cliSession) opening(id uint64) *clientStream {
	if st := cs.s.ep.streams.opening[id]; st != nil && st.sess == cs.s {
		return st
	}
	return nil
}

// onFrame applies a server's frame; true once the stream needs no more
// (its Header, its End and every message came, or it failed).
func (st *clientStream) onFrame(f *stream.Frame) (over bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	var err error
	switch f.Kind {
	case stream.KindHeader:
		if !st.gotHeader && st.over == nil {
			st.header, _, _ = parseRequestMetadata(f.Meta)
			st.gotHeader = true
			close(st.headerDone)
			if st.recvWait { // messages may have come first, in another answer: Recv waits for the header to give them
				wake(st.recvWake)
			}
		}
	case stream.KindData:
		if err = st.recv.Accept(f.Seq, f.Data); err == nil && st.recvWait {
			wake(st.recvWake)
		}
	case stream.KindGrant:
		if st.send.Grant(f.MsgLimit, f.ByteLimit) {
			st.sess.ep.streams.refuse() // beyond the window the server announced: clamped to it
		}
		if st.sendWait {
			wake(st.sendWake)
		}
	case stream.KindEnd:
		if err = st.recv.End(f.Seq); err == nil {
			// The Header may still be on its way, in another answer: a
			// server always sends it before the End, and the stream
			// stays until it has come.
			st.trailer, _, _ = parseRequestMetadata(f.Meta)
			st.status = st.endStatus(Code(f.Code), f.Data)
			st.gotEnd = true
			wake(st.recvWake)
			wake(st.sendWake)
		}
	default:
		err = stream.ErrMalformed
	}
	if err != nil {
		st.endLocked(streamError(st.method, st.sess.target, &Error{Code: Internal, Msg: "stream protocol violation by the server: " + err.Error()}))
		return true
	}
	return st.settledLocked()
}

// settledLocked reports whether the stream needs no more frames: it
// ended here, or its Header, its End and every message came.
func (st *clientStream) settledLocked() bool {
	return st.over != nil || (st.gotHeader && st.gotEnd && st.recv.Received())
}

// endStatus is Recv's error for an End with code and status payload.
func (st *clientStream) endStatus(code Code, payload []byte) error {
	if code == OK {
		return io.EOF
	}
	msg, details := decodeErrorPayload(payload)
	e := &Error{Code: code, Msg: msg, Details: details}
	switch code {
	case DeadlineExceeded:
		e.Cause = context.DeadlineExceeded
	case Canceled:
		e.Cause = context.Canceled
	}
	return e
}

// failAll ends every stream of the session with e. The session may live
// on (a server that refused an exchange again and again, say), so each
// stream whose handler had not ended it yet sends a Cancel: its handler's
// context ends now rather than at the session's end, and the server no
// longer holds exchanges parked for it (the Cancel drops the stream here
// once it goes, see takeTurn).
func (cs *cliSession) failAll(e *Error) {
	for id, st := range cs.streams {
		st.mu.Lock()
		tell := st.over == nil && !st.gotEnd
		st.endLocked(streamError(st.method, cs.s.target, e))
		if tell {
			st.cancelOut = Canceled
			st.out, st.outOff = st.out[:0], 0
			if !st.queued { // else it is queued, or its kick on the way
				st.queued = true
				cs.outq = append(cs.outq, st)
			}
		}
		st.mu.Unlock()
		if !tell {
			cs.drop(id)
		}
	}
}

// sessionDown fails the streams opened on engine session sid, which ended.
func (cs *cliSession) sessionDown(sid proto.SessionID, cause error) {
	e := engineError(cause)
	e = &Error{Code: Unavailable, Msg: "the session ended: " + e.Msg, Cause: cause}
	for id, st := range cs.streams {
		if st.sid == sid {
			st.mu.Lock()
			st.endLocked(streamError(st.method, cs.s.target, e))
			st.mu.Unlock()
			cs.drop(id)
		}
	}
}

// add and drop keep the session's streams and its count of them, which a
// Client reads to close a retired session only once its streams are over.
func (cs *cliSession) add(st *clientStream) {
	cs.streams[st.id] = st
	cs.s.openStreams.Add(1)
}

func (cs *cliSession) drop(id uint64) {
	if _, ok := cs.streams[id]; ok {
		delete(cs.streams, id)
		cs.s.openStreams.Add(-1)
	}
}
