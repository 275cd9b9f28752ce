package proto

import (
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// clientReceive handles a server-to-client packet.
func (e *Engine) clientReceive(now Time, from netip.AddrPort, h *wire.Header, payload []byte) {
	switch h.Type {
	case wire.TypeReset:
		e.onReset(now, from, h)
		return
	case wire.TypePathChallenge:
		e.onPathChallenge(now, from, h)
		return
	}
	s := e.lookup(h.Session)
	if s != nil && s.c != nil && s.token == h.Token && e.wrongTag(s) {
		return
	}
	if s == nil || s.c == nil || !s.accepts(from, h) {
		if !e.answerAbandoned(now, from, h, payload) {
			e.stats.DropUnknownSession++
		}
		return
	}
	if h.Flags&wire.FlagDraining != 0 {
		e.onDraining(s)
		if h.Type == wire.TypePong && h.Code == wire.CodeDraining {
			s.lastHeard = now
			return // the notice answers no ping
		}
	}
	if !s.up {
		if h.Type == wire.TypeConnectAck {
			e.onConnectAck(now, s, h, payload)
		} else {
			e.stats.DropStale++
		}
		return
	}
	s.lastHeard = now
	switch h.Type {
	case wire.TypeCR:
		e.onCR(now, s, h)
	case wire.TypeResp:
		e.onResp(now, s, h, payload)
	case wire.TypeNack:
		e.onNack(now, s, h)
	case wire.TypeCancelAck:
		e.onCancelAck(s, h)
	case wire.TypePong:
		e.onPong(now, s, h)
	default: // a duplicate connect-ack
		e.stats.DropStale++
	}
	if e.sessions[s.num] != s {
		return
	}
	if !s.c.lean {
		e.detectLoss(now, s)
	}
	e.pump(now, s)
	e.settle(now, s)
}

// activeSlot returns the slot carrying request reqNum if it is still in
// progress, or -1: replies to finished or canceled requests are stale.
func activeSlot(s *session, reqNum uint64) int {
	i := s.slotOf(reqNum)
	sl := &s.c.slots[i]
	if sl.state != cslotActive || sl.reqNum != reqNum {
		return -1
	}
	return i
}

// ackReply matches a reply to the in-flight record its echoed sequence
// number names, returns that record's credit and takes an RTT sample net of
// the time the server held the packet. A reply that names no record (a
// duplicate, or an answer to a copy already answered) only carries data.
func (e *Engine) ackReply(now Time, s *session, h *wire.Header) {
	cs := s.c
	j := cs.flight.find(h.TxSeq)
	if j < 0 {
		e.noteLateReply(now, cs, h)
		return
	}
	r := cs.flight.recs[j]
	if int(r.slot) != s.slotOf(h.ReqNum) || cs.slots[r.slot].reqNum != h.ReqNum || !answers(h, &r) {
		e.stats.DropMalformed++
		return
	}
	cs.ackRecord(j)
	cs.lastAck = now
	cs.timeouts = 0
	cs.relaxFloor(now)
	if cs.lean {
		return // no loss to detect, no timer to set: no marks, no samples
	}
	// Only a reply to this very transmission says later-sent packets were
	// overtaken; a record dropped because another copy was answered does not.
	if m := &cs.largest[r.path]; !m.ok || seqBefore(m.seq, r.seq) {
		*m = seqMark{r.seq, true}
	}
	if h.HoldMicros != wire.HoldSaturated {
		rtt := now.Sub(r.sentAt) - time.Duration(h.HoldMicros)*time.Microsecond
		cs.rtt.sample(rtt)
		if !cs.noCC {
			cs.cc.OnAck(int64(now), rtt, exchangeBytes(s, h, &r), int(r.path), h.Flags&wire.FlagUnderShare != 0)
		}
	}
}

// exchangeBytes is the larger of the two packets of an acknowledged
// exchange, the packet r sent and the reply h: what a bottleneck on the
// way had to serialize (congestion control's link floor).
func exchangeBytes(s *session, h *wire.Header, r *inflight) int {
	reply := wire.HeaderLen
	if h.Type == wire.TypeResp {
		lo, hi := dataRange(h.PktIndex, int(h.MsgSize), s.dpp)
		reply += max(hi-lo, 0)
	}
	return max(int(r.bytes), reply)
}

// answers reports whether reply h can be the answer to client packet r.
func answers(h *wire.Header, r *inflight) bool {
	switch h.Type {
	case wire.TypeCR:
		return r.idx == h.PktIndex
	case wire.TypeResp:
		return (r.kind == kindRFR && r.idx == h.PktIndex) || (r.kind == kindReq && h.PktIndex == 0)
	}
	return true // a NACK answers any packet of its request
}

// onCR: the server has request packet PktIndex (or, flagged pending, the
// whole request, and its handler is still running).
func (e *Engine) onCR(now Time, s *session, h *wire.Header) {
	e.ackReply(now, s, h)
	i := activeSlot(s, h.ReqNum)
	if i < 0 {
		return
	}
	cs := s.c
	sl := &cs.slots[i]
	sl.lastProgress = now
	if h.Flags&wire.FlagPending == 0 {
		sl.probes = 0
	}
	if sl.respSize < 0 && h.PktIndex < sl.reqPkts && !sl.reqAcked.set(h.PktIndex) {
		sl.reqAckedN++
		cs.ackPacket(now, i, kindReq, h.PktIndex)
	}
}

// onResp stores a response packet and completes the call when it has them all.
func (e *Engine) onResp(now Time, s *session, h *wire.Header, payload []byte) {
	e.ackReply(now, s, h)
	i := activeSlot(s, h.ReqNum)
	if i < 0 {
		e.stats.DropStale++
		return
	}
	if !validData(h, len(payload), s.dpp, s.maxMsg) {
		e.stats.DropMalformed++
		return
	}
	cs := s.c
	sl := &cs.slots[i]
	if sl.respSize < 0 {
		// The server has the whole request: every request packet is
		// acknowledged, whatever CRs were lost.
		if sl.nflight > 0 {
			n := cs.flight.removeKind(uint16(i), kindReq)
			sl.nflight -= n
			cs.avail += n
		}
		sl.reqAckedN = sl.reqPkts
		sl.respSize = int(h.MsgSize)
		sl.respPkts = uint32(wire.NumPackets(sl.respSize, s.dpp))
		sl.respGot.reset(sl.respPkts)
		sl.respGotN = 0
		sl.status = h.Code
		sl.respMeta = h.Flags&wire.FlagMetadata != 0
		sl.call.resp = sized(sl.call.resp, sl.respSize)
		if sl.hasNew() {
			cs.stamp(i) // its requests for response packets queue now
		}
	} else if int(h.MsgSize) != sl.respSize || h.Code != sl.status || (h.Flags&wire.FlagMetadata != 0) != sl.respMeta {
		e.stats.DropMalformed++
		return
	}
	sl.lastProgress = now
	sl.probes = 0
	cs.ackPacket(now, i, kindRFR, h.PktIndex)
	if !sl.respGot.set(h.PktIndex) {
		lo, hi := dataRange(h.PktIndex, sl.respSize, s.dpp)
		copy(sl.call.resp[lo:hi], payload)
		sl.respGotN++
	}
	if sl.respGotN == sl.respPkts {
		e.completeSlot(s, i, sl.call.resp, sl.status, nil)
	}
}

// sized returns b resized to n, reusing its memory when it is large enough.
func sized(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]byte, n)
}

// onNack: the server refused the request for lack of room (NEBULA's
// fail-fast); the caller learns at once instead of waiting in a deep queue.
func (e *Engine) onNack(now Time, s *session, h *wire.Header) {
	e.ackReply(now, s, h)
	i := activeSlot(s, h.ReqNum)
	if i < 0 {
		e.stats.DropStale++
		return
	}
	e.stats.NacksReceived++
	var err error = ErrOverloaded
	if h.Code == wire.CodeMsgTooLarge {
		err = &SizeError{Size: len(s.c.slots[i].call.req), Max: int(h.MsgSize), Request: true}
	}
	e.completeSlot(s, i, nil, h.Code, err)
}

// onCancelAck: the server dropped a canceled request; its slot is free.
func (e *Engine) onCancelAck(s *session, h *wire.Header) {
	i := s.slotOf(h.ReqNum)
	sl := &s.c.slots[i]
	if sl.state != cslotCanceling || sl.reqNum != h.ReqNum {
		e.stats.DropStale++
		return
	}
	s.c.cancelsN--
	e.releaseSlot(s, i)
}

func (e *Engine) onPong(now Time, s *session, h *wire.Header) {
	cs := s.c
	if !cs.pingOut {
		return
	}
	if h.TxSeq == cs.pingSeq && h.HoldMicros != wire.HoldSaturated {
		cs.rtt.sample(now.Sub(cs.pingSentAt))
	}
	cs.pingOut = false
}

// onConnectAck completes the handshake of a connecting session.
func (e *Engine) onConnectAck(now Time, s *session, h *wire.Header, payload []byte) {
	switch h.Code {
	case wire.CodeOK:
	case wire.CodeTooManySessions:
		e.endSession(now, s, ErrTooMany)
		return
	case wire.CodeNotServing:
		e.endSession(now, s, ErrNotServing)
		return
	case wire.CodeRetry:
		e.onRetry(now, s, payload)
		return
	case wire.CodeTLSRequired:
		e.endSession(now, s, ErrTLSRequired)
		return
	default:
		e.endSession(now, s, ErrRefused)
		return
	}
	var c wire.Connect
	if c.Parse(payload) != nil || c.Token == 0 {
		e.stats.DropMalformed++
		return
	}
	cs := s.c
	s.remote = c.Session
	s.peerToken = c.Token
	e.byRemote[s.remoteKey()] = s
	cs.credits = s.negotiate(&e.cfg, &c)
	cs.paths = e.cfg.Paths
	cs.largest = cs.largest1[:]
	if cs.paths != 1 {
		cs.largest = make([]seqMark, cs.paths)
	}
	cs.flight.useInline()
	cs.avail = cs.credits
	ccfg := e.cfg.CC
	ccfg.MaxWindow = float64(cs.credits)
	ccfg.PacketSize = s.dpp + wire.HeaderLen
	cs.cc.Init(ccfg, cs.paths)
	cs.slots = make([]clientSlot, s.window)
	cs.live.reset(uint32(s.window))
	for i := range cs.slots {
		cs.slots[i].reqNum = uint64(i)
		cs.slots[i].lastProgress = Never
	}
	if s.window <= len(cs.free.inline) {
		cs.free.useInline()
	}
	for i := len(cs.slots) - 1; i >= 0; i-- {
		cs.free.push(i)
	}
	s.up = true
	s.lastHeard = now
	if h.TxSeq == cs.txSeq { // answers the latest attempt: a clean first RTT sample
		rtt := now.Sub(cs.nextConnect) + e.cfg.ConnectRetry
		cs.rtt.sample(rtt)
		cs.cc.ObserveBase(int64(now), rtt, 0)
	}
	e.emitEvent(Event{Type: EventSessionUp, Session: s.id(), Peer: s.peer, SessionTag: s.tag})
	e.pump(now, s)
	if h.Flags&wire.FlagConfirm != 0 && !cs.busy() {
		// The server reaps the session unless a packet with its token
		// comes soon (Config.HalfOpenTimeout), and we have nothing to
		// send: ping. An unanswered ping is resent like any.
		e.sendPing(now, s)
	}
	e.settle(now, s)
}

// onRetry: the server is under a connect flood and wants the connect again
// with the cookie it sent, which proves we receive at our address. A new
// cookie goes out at once; the same one again waits for the next connect
// retry, so a server that keeps answering so cannot make us spin.
//
// A retry is an answer: the server is alive, and the connect now needs a
// second round trip, so a new cookie gives the connect a full
// FailureTimeout from now. Without it a client more than half of
// FailureTimeout away (two round trips) could never connect during a
// flood. At most maxConnectRetries retries extend it, so a server that
// only ever answers with retries still fails the connect, within
// (1+maxConnectRetries) x FailureTimeout of its start.
func (e *Engine) onRetry(now Time, s *session, payload []byte) {
	var c wire.Connect
	if c.Parse(payload) != nil || !c.HasCookie {
		e.stats.DropMalformed++
		return
	}
	cs := s.c
	if cs.hasCookie && cs.cookie == c.Cookie {
		return
	}
	cs.cookie, cs.hasCookie = c.Cookie, true
	if cs.retries < maxConnectRetries {
		cs.retries++
		cs.connectDue = maxTime(cs.connectDue, now.Add(e.cfg.FailureTimeout))
	}
	e.sendConnect(now, s)
}

// maxConnectRetries bounds the retries (wire.CodeRetry) that extend a
// connect's deadline. A cookie changes every 2 to 4 s (cookieBucket), so
// a real client needs one, or two if its echo crosses a bucket's end;
// three leave room for a lost echo.
const maxConnectRetries = 3

// onReset: the server does not know the session (it restarted, reaped it,
// or ended it for a newer one): fail it, so the caller can reconnect.
//
// The reset says the server has had no session with this number and token
// for at least `since`. Every packet of a request sent later than that
// (allowing 0.1 % for the two clocks' rates) reached no live session, so
// the request never ran and may be sent again on a new session. A request
// with a packet sent earlier may have run; its call fails. A server that
// closes the session itself says instead which request numbers it never
// saw: those never ran either.
//
// Either claim lets the driver run a request again, so a reset must show
// it comes from the server the session's packets reach. The server's
// token, which names the session, is in every client packet; so a reset
// for a session the server lost must also echo the sequence number and
// request number of a packet still outstanding (in flight, the ping, a
// cancel), and a closing notice must carry our own token, which only the
// server's packets show. A reset that does neither is dropped. (Anyone
// who reads the session's packets can still forge both: see the wire
// package's threat model.)
func (e *Engine) onReset(now Time, from netip.AddrPort, h *wire.Header) {
	s := e.byRemote[remoteKey{addr: from, num: h.Session, token: h.Token}]
	if s == nil || !s.up {
		e.stats.DropUnknownSession++
		return
	}
	closing := h.Code == wire.CodeServerClosing
	if (closing && h.MsgSize != s.token) || (!closing && !echoesOutstanding(s, h)) {
		e.stats.DropStale++
		return
	}
	since := time.Duration(h.MsgSize) * time.Microsecond
	ended := now - Time(since) + Time(since/1000+time.Microsecond) // may be before 0: Time.Add saturates

	for i := range s.c.slots {
		sl := &s.c.slots[i]
		if sl.state != cslotActive || !sl.sent {
			continue
		}
		// A closing server says which numbers it never saw; another
		// reset, for how long it has had no such session.
		if (closing && sl.reqNum >= h.ReqNum) || (!closing && sl.firstSent > ended) {
			sl.unexecuted = true
		}
	}
	err := ErrSessionReset
	if closing {
		err = ErrServerClosed
	}
	e.endSession(now, s, err)
}

// echoesOutstanding reports whether reset h echoes the sequence number and
// request number of a packet of s still awaiting its answer: a request or
// response-request packet in flight, the unanswered ping, or a canceling
// slot's latest cancel.
func echoesOutstanding(s *session, h *wire.Header) bool {
	cs := s.c
	if j := cs.flight.find(h.TxSeq); j >= 0 {
		return cs.slots[cs.flight.recs[j].slot].reqNum == h.ReqNum
	}
	if cs.pingOut && h.TxSeq == cs.pingSeq {
		return h.ReqNum == 0
	}
	sl := &cs.slots[s.slotOf(h.ReqNum)]
	return sl.state == cslotCanceling && sl.reqNum == h.ReqNum && sl.cancelSeq == h.TxSeq
}
