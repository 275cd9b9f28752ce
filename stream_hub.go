package erpc

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/stream"
)

// streamHub is an endpoint's stream state: the streams it serves, by
// server session, and the client side of the sessions it dialed that
// have streams. The loop owns it, but for its counters (StreamStats) and
// the IDs clients take (nextID).
type streamHub struct {
	srv    map[proto.SessionID]*srvSession
	cli    map[*Session]*cliSession
	cliSid map[proto.SessionID]*cliSession // by the engine sessions its streams were opened on
	// opening is the client streams whose opening is out, by ID: the
	// handler's first frames may come before the opening's answer.
	opening map[uint64]*clientStream
	count   streamCounters
	nextID  atomic.Uint64
}

// srvSession is one client session's streams on the server (the loop's).
type srvSession struct {
	ep      *Endpoint
	sid     proto.SessionID
	streams map[uint64]*serverStream
	parked  []Request       // requests the client left for the server to answer when it has output (maxParked)
	outq    []*serverStream // streams with output, in the order they got it
	gone    bool            // the session ended
}

func (h *streamHub) server(ep *Endpoint, sid proto.SessionID, create bool) *srvSession {
	ss := h.srv[sid]
	if ss == nil && create {
		if h.srv == nil {
			h.srv = map[proto.SessionID]*srvSession{}
		}
		ss = &srvSession{ep: ep, sid: sid, streams: map[uint64]*serverStream{}}
		h.srv[sid] = ss
	}
	return ss
}

// streamsSessionDown ends the streams of a session that ended (on the
// loop), both sides with Unavailable: a server's streams see their
// context end, saying whether the client's session ended or this
// endpoint closed.
func (ep *Endpoint) streamsSessionDown(sid proto.SessionID, server bool, cause error) {
	h := &ep.streams
	if !server {
		if cs := h.cliSid[sid]; cs != nil {
			delete(h.cliSid, sid)
			cs.sessionDown(sid, cause)
			if cs.s.closed.Load() && len(cs.streams) == 0 {
				delete(h.cli, cs.s)
			}
		}
		return
	}
	ss := h.srv[sid]
	if ss == nil {
		return
	}
	delete(h.srv, sid)
	ss.gone = true
	for len(ss.parked) > 0 { // answered to nobody: the engine releases them (else held for good)
		_ = ss.unpark().Respond(nil)
	}
	msg := "the client's session ended"
	if ep.state.Load() == stateClosed {
		msg = "this endpoint closed"
	}
	err := &Error{Code: Unavailable, Msg: msg, Cause: cause}
	for _, st := range ss.streams {
		st.abort(err)
	}
	ss.streams, ss.outq = nil, nil
}

// shutdownStreams ends every served stream with Unavailable (the
// endpoint's Shutdown began): the handlers' contexts end, and their
// clients get the status now, in the answers parked for them.
func (ep *Endpoint) shutdownStreams() {
	err := &Error{Code: Unavailable, Msg: "server shutting down"}
	code, payload := streamStatus(err)
	for _, ss := range ep.streams.srv {
		for _, st := range ss.streams {
			st.mu.Lock()
			if !st.finished {
				st.finishLocked(code, payload)
				if !st.queued {
					st.queued = true
					ss.outq = append(ss.outq, st)
				}
			}
			st.endLocked(err)
			st.mu.Unlock()
			st.cancel(err)
		}
		ss.answerParked()
	}
}

// abort ends a stream the client gave up on (or lost): nothing more goes
// out, and the handler's context ends with err (on the loop).
// The stream ends before its context, so that a handler woken by the
// context finds Send and Recv failing; they wait for the context's end
// before they fail (endLocked), so that a handler they fail finds it
// done.
func (st *serverStream) abort(err *Error) {
	st.mu.Lock()
	st.finished = true
	st.out, st.outOff = st.out[:0], 0
	st.ss = nil
	st.endLocked(err)
	st.mu.Unlock()
	st.cancel(err)
}

// errRefused counts a frame the server refuses.
func (h *streamHub) refuse() { h.count.refused.Add(1) }

// answerParked answers the parked request with the session's output, if
// there is any.
func (ss *srvSession) answerParked() {
	for len(ss.parked) > 0 && len(ss.outq) > 0 {
		ss.respond(ss.unpark())
	}
	ss.unparkIfIdle()
}

// respond answers q with the session's output, in memory of the engine's
// pool, which the engine takes over (no allocation, whatever the size).
func (ss *srvSession) respond(q Request) {
	size := ss.pending(streamBatch(ss.ep, ss.sid))
	if size == 0 {
		_ = q.Respond(nil)
		return
	}
	out := ss.answer(ss.ep.eng.Buffer(size)[:0], size) // built in place: no copy
	if len(out) == 0 {
		_ = q.Respond(nil)
		ss.ep.eng.Recycle(out)
		return
	}
	if q.respondOwned(out) != nil {
		ss.ep.eng.Recycle(out) // the request is gone (its session ended)
	}
}

// grantRoom is room enough for a Grant frame.
const grantRoom = 1 + 3*10

// pending is the size of the answer the queued output makes: at most
// limit, but at least the first stream's first frame whatever its size
// (each stream's share with room for a Grant frame).
func (ss *srvSession) pending(limit int) int {
	n := 0
	for _, st := range ss.outq {
		st.mu.Lock()
		out := st.out[st.outOff:]
		size, first := len(out)+grantRoom, 0
		if n == 0 {
			first = stream.Cut(out, 0, true) + grantRoom
		}
		st.mu.Unlock()
		if n += size; n >= limit {
			return max(limit, first)
		}
	}
	return n
}

// unpark takes the oldest parked request.
func (ss *srvSession) unpark() Request {
	q := ss.parked[0]
	n := copy(ss.parked, ss.parked[1:])
	ss.parked[n] = Request{}
	ss.parked = ss.parked[:n]
	return q
}

// unparkIfIdle answers the parked requests, empty, once the session has
// no streams left: the client parks none then, and they would hold its
// session's slots for nothing.
func (ss *srvSession) unparkIfIdle() {
	for len(ss.streams) == 0 && len(ss.parked) > 0 {
		_ = ss.unpark().Respond(nil)
	}
}

// answer builds an answer from the queued streams' output, at most max
// bytes but at least one frame, a turn per stream (takeTurns).
func (ss *srvSession) answer(b []byte, max int) []byte {
	b, ss.outq = takeTurns(ss.outq, b, 0, max)
	return b
}

// streamBatch is the most a batch of frames on engine session sid
// carries: a megabyte, or less if the session's messages are smaller
// (the smaller of its two ends' WithMaxMessageSize). On the loop.
func streamBatch(ep *Endpoint, sid proto.SessionID) int {
	m := ep.eng.MaxMsgSize(sid)
	if m <= 0 {
		m = maxMessage(ep)
	}
	return min(1<<20, m)
}

// maxMessage is the endpoint's message limit.
func maxMessage(ep *Endpoint) int {
	if n := ep.opts.engine.MaxMsgSize; n > 0 {
		return n
	}
	return 8 << 20
}

// maxStreamMessage is the largest message a stream carries: one frame in
// a batch of the endpoint's largest message.
func maxStreamMessage(ep *Endpoint) int { return maxMessage(ep) - 64 }

// sessionStreamMessage is the largest message a stream on engine session
// sid sends: one frame (and a Grant) in a batch of the session's largest
// message (a frame larger than a batch goes alone). On the loop.
func sessionStreamMessage(ep *Endpoint, sid proto.SessionID) int {
	if m := ep.eng.MaxMsgSize(sid); m > 0 {
		return min(maxStreamMessage(ep), m-64)
	}
	return maxStreamMessage(ep)
}

// kickServer queues st's output on its session and answers the parked
// request if any (on the loop).
func (st *serverStream) onKick() {
	ss := st.ss
	if ss == nil || ss.gone {
		return
	}
	ss.outq = append(ss.outq, st)
	ss.answerParked()
}

// takeTurn moves up to a turn of st's output to the answer b (see
// turnTaker); once its End frame went, the stream is forgotten (on the
// loop).
func (st *serverStream) takeTurn(b []byte, start, max, turn int) (_ []byte, more, fits bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	first := len(b) == start
	if !first && max-len(b) < grantRoom { // no room for a Grant: the next batch
		return b, true, false
	}
	if !st.finished && st.recv.GrantDue() {
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
	if n < len(out) {
		// What is left stays where it is: moving it to the front after
		// every batch copied up to a window per megabyte sent (a fifth
		// of a 16-stream bulk server's CPU). It moves only once the
		// part already sent is at least as large, so each byte moves at
		// most once on average.
		st.outOff += n
		if rest := len(st.out) - st.outOff; st.outOff >= rest {
			st.out, st.outOff = st.out[:copy(st.out, st.out[st.outOff:])], 0
		}
		st.outUse.saw(before)
		return b, true, true
	}
	st.out, st.outOff = st.outUse.drained(st.out[:0], before), 0
	st.queued = false
	if st.finished { // the End went: the stream is over on the wire
		if ss := st.ss; ss != nil {
			delete(ss.streams, st.id)
		}
		st.ss = nil
	}
	return b, false, true
}

// A stream's output buffer (out) holds the frames its sender queued
// and the loop has not put in a batch yet: a burst grows it to a window.
// Once drained, a buffer grown beyond keptOutBytes goes to outPool
// rather than staying with the stream, so that an idle stream keeps a
// few kilobytes, not its largest burst. A stream whose last use of it
// was large takes one from the pool for its next frames (a flood reuses
// them, allocating a 24-byte box per batch); the garbage collector frees
// what no stream takes. A stream of small messages keeps its own small
// buffer and never touches the pool.
const keptOutBytes = stream.KeptFreeBytes

var outPool sync.Pool // of *[]byte, each empty and larger than keptOutBytes

// outUse is what a stream remembers of its output buffer's use.
type outUse struct {
	high  int  // the most it held since it was last released
	large bool // it was released after a large use: take a pooled one for the next
}

// drained is the output buffer after a take left len(out) bytes in it:
// nil once a large one, drained, went to the pool.
func (u *outUse) drained(out []byte, before int) []byte {
	u.saw(before)
	if len(out) > 0 || cap(out) <= keptOutBytes {
		return out
	}
	u.large, u.high = u.high > keptOutBytes, 0
	b := out[:0]
	outPool.Put(&b)
	return nil
}

// saw records that out held n bytes.
func (u *outUse) saw(n int) { u.high = max(u.high, n) }

// grow makes room for n more bytes in out, from the pool if the buffer
// was released after a large use or n takes it beyond keptOutBytes.
func (u *outUse) grow(out []byte, n int) []byte {
	if cap(out)-len(out) >= n || (len(out)+n <= keptOutBytes && !(u.large && cap(out) == 0)) {
		return out
	}
	u.large = false
	p, ok := outPool.Get().(*[]byte)
	if !ok {
		return out
	}
	if cap(*p) < len(out)+n {
		outPool.Put(p)
		return out
	}
	return append((*p)[:0], out...)
}

// streamError makes a stream's error message say which stream.
func streamError(method, target string, e *Error) *Error {
	c := *e
	c.Msg = fmt.Sprintf("stream %q to %s: %s", method, target, e.Msg)
	return &c
}
