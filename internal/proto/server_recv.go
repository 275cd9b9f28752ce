package proto

import (
	"math"
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// serverReceive handles a client-to-server packet. Every packet it sends
// answers the packet at hand, echoing its sequence number and path.
func (e *Engine) serverReceive(now Time, from netip.AddrPort, h *wire.Header, payload []byte) {
	if h.Type == wire.TypeConnect {
		e.onConnect(now, from, h, payload)
		return
	}
	s := e.lookup(h.Session)
	if s != nil && s.s != nil && s.token == h.Token && e.wrongTag(s) {
		return // another association's packet: not even challenged
	}
	if s == nil || s.s == nil || !s.accepts(from, h) || h.Type == wire.TypePathResponse {
		e.unaccepted(now, from, h, s)
		return
	}
	s.lastHeard, s.s.from = now, from
	if !s.s.confirmed {
		if h.Type == wire.TypeDisconnect { // nothing to confirm: it ends
			e.endSession(now, s, ErrSessionClosed)
			return
		}
		e.establish(now, s)
	}
	switch h.Type {
	case wire.TypeReq:
		e.onReq(now, s, h, payload)
	case wire.TypeRFR:
		e.onRFR(s, h)
	case wire.TypeCancel:
		e.onCancel(s, h)
	case wire.TypePing:
		e.reply(s, h, wire.TypePong, 0, 0)
	case wire.TypeDisconnect:
		e.endSession(now, s, ErrSessionClosed)
	}
}

// unaccepted handles a client packet that no session takes as it is: s is
// the session its number names, if any. A live session's token from an
// IP the session does not know is its client moving, or a forged source:
// the address is challenged, never reset (migrate.go). Anything else
// names no session we have and gets a reset, but a disconnect (there is
// nothing left to end) and a path response (nothing to answer).
func (e *Engine) unaccepted(now Time, from netip.AddrPort, h *wire.Header, s *session) {
	live := s != nil && s.s != nil && s.token == h.Token
	switch {
	case live && h.Type == wire.TypePathResponse:
		e.onPathResponse(now, from, s, h)
	case live:
		e.onNewPath(now, from, s, h)
	default:
		e.stats.DropUnknownSession++
		if h.Type != wire.TypeDisconnect && h.Type != wire.TypePathResponse {
			e.sendReset(now, from, h, s)
		}
	}
}

// reply sends a header-only answer to client packet in.
func (e *Engine) reply(s *session, in *wire.Header, t wire.Type, flags wire.Flags, code uint8) {
	h := s.header(t, in.ReqNum)
	h.Flags, h.Code = flags, code
	h.ReqType, h.PktIndex, h.TxSeq, h.Path = in.ReqType, in.PktIndex, in.TxSeq, in.Path
	e.emitFor(s, e.from, &h, nil)
}

// sendReset tells a client that this engine has no session matching its
// packet: the server restarted, reaped the session, or the token is stale.
// It says for how long at least it has had no such session (see the wire
// doc), which lets the client prove that requests sent since never ran.
// A packet that carries the token of a session this engine has now, but
// that the session does not accept, names a session that exists: the
// reset then claims nothing (since 0), for that session may have run the
// request.
func (e *Engine) sendReset(now Time, to netip.AddrPort, in *wire.Header, known *session) {
	code := wire.CodeUnknownSession
	if known != nil {
		code = wire.CodeStaleToken
	}
	since := e.noSessionFor(now, in.Session) / time.Microsecond
	if known != nil && known.token == in.Token {
		since = 0
	}
	h := wire.Header{Type: wire.TypeReset, Code: code, Session: in.Session, Token: in.Token,
		ReqNum: in.ReqNum, TxSeq: in.TxSeq, Path: in.Path, MsgSize: uint32(min(max(since, 0), math.MaxUint32))}
	e.emit(to, &h, nil)
	e.stats.ResetsSent++
}

// confirm marks s as the live session of its client's number: a packet
// carrying the token only our connect-ack told proves the client at that
// address has it. An older session of the same client number is then
// taken for dead (the client restarted, or reused the number after
// closing it) and ends, but only if its client was last heard at the very
// address the confirming packet came from, and not since s's connect (its
// latest copy). One
// whose client has since spoken from another port is not: a NAT rebinding
// moved it, and may give its old port to another client, whose engine
// numbers its sessions from 0 too; nor is one still heard from, whoever
// holds the address now. Ending an idle session wrongly (the NAT handed
// its port over before its client spoke from the new one) costs its
// client a reconnect: its next request gets a reset proving it never ran,
// and goes again on a new session. A connect alone never ends a session:
// a forged or late one could.
func (e *Engine) confirm(now Time, s *session) {
	s.s.confirmed = true
	e.halfOpen.remove(s)
	k := s.s.key.client()
	if old := e.byClient[k]; old != nil && old != s && old.s.from == s.s.from && old.lastHeard < s.s.opened {
		e.endSession(now, old, ErrSessionReset)
	}
	e.byClient[k] = s
}

// onReq handles a request data packet.
func (e *Engine) onReq(now Time, s *session, h *wire.Header, payload []byte) {
	s.s.unseen = max(s.s.unseen, h.ReqNum+1)
	sl := &s.s.slots[s.slotOf(h.ReqNum)]
	if int(h.MsgSize) > s.maxMsg {
		if sl.state == sslotIdle || h.ReqNum > sl.reqNum {
			e.retireSlot(sl)
			e.nack(now, s, sl, h, wire.CodeMsgTooLarge)
		}
		return
	}
	if !validData(h, len(payload), s.dpp, s.maxMsg) {
		e.stats.DropMalformed++
		return
	}
	switch {
	case sl.state == sslotIdle || h.ReqNum > sl.reqNum:
		// A new request: the client has the previous response of this
		// slot, so it can go.
		e.retireSlot(sl)
		if !e.admit(int(h.MsgSize)) {
			e.nack(now, s, sl, h, wire.CodeServerFull)
			return
		}
		sl.reqNum = h.ReqNum
		sl.state = sslotReceiving
		sl.req = e.newRequest(s, h)
	case h.ReqNum < sl.reqNum:
		e.stats.DropStale++
		return
	}
	if s.s.metered {
		s.s.under = e.share.add(now, &s.s.share, len(payload)+wire.HeaderLen)
	}
	switch sl.state {
	case sslotReceiving:
		e.reassemble(now, s, sl, h, payload)
	case sslotHandling:
		e.reply(s, h, wire.TypeCR, wire.FlagPending, 0)
	case sslotResponded: // the client lost response packet 0
		e.sendResp(s, sl, 0, h.TxSeq, h.Path, 0)
	case sslotNacked:
		e.sendNack(s, h, sl.code)
	default: // canceled: a copy that was still on the wire
		e.stats.DropStale++
	}
}

// nack refuses request h in slot sl and remembers it, so duplicates get the
// same answer. A NACK for a request too large says the session's limit.
func (e *Engine) nack(now Time, s *session, sl *serverSlot, h *wire.Header, code uint8) {
	sl.reqNum = h.ReqNum
	sl.state = sslotNacked
	sl.code = code
	e.sendNack(s, h, code)
	e.stats.NacksSent++
	e.nacks.add(now)
}

func (e *Engine) sendNack(s *session, in *wire.Header, code uint8) {
	h := s.header(wire.TypeNack, in.ReqNum)
	h.Code = code
	h.ReqType, h.PktIndex, h.TxSeq, h.Path = in.ReqType, in.PktIndex, in.TxSeq, in.Path
	if code == wire.CodeMsgTooLarge {
		h.MsgSize = uint32(s.maxMsg)
	}
	e.emitFor(s, e.from, &h, nil)
}

// reassemble stores a request packet, in any order and any number of
// times, and delivers the request when its last missing packet arrives. The
// reply to that packet is owed until the handler responds or the round ends.
func (e *Engine) reassemble(now Time, s *session, sl *serverSlot, h *wire.Header, payload []byte) {
	r := sl.req
	if int(h.MsgSize) != len(r.data) || h.ReqType != r.reqType {
		e.stats.DropMalformed++
		return
	}
	if !r.got.set(h.PktIndex) {
		lo, _ := dataRange(h.PktIndex, len(r.data), s.dpp)
		copy(r.data[lo:], payload)
		r.gotN++
	}
	if r.gotN < r.pkts {
		e.reply(s, h, wire.TypeCR, shareFlag(s), 0)
		return
	}
	sl.state = sslotHandling
	r.state = reqHandling
	r.owedSeq, r.owedIdx, r.owedPath, r.owedTo = h.TxSeq, h.PktIndex, h.Path, e.from
	r.arrived = now
	if h.Flags&wire.FlagDeadline != 0 {
		r.deadline = now.Add(wire.DecodeTimeout(h.HoldMicros))
	}
	r.meta = h.Flags&wire.FlagMetadata != 0
	e.owe(r)
	ev := e.newEvent(EventRequest)
	ev.Session, ev.Req = s.id(), r.handle()
}

// onRFR sends the response packet the client asks for.
func (e *Engine) onRFR(s *session, h *wire.Header) {
	sl := &s.s.slots[s.slotOf(h.ReqNum)]
	if h.ReqNum != sl.reqNum {
		e.stats.DropStale++
		return
	}
	switch sl.state {
	case sslotResponded:
		if h.PktIndex >= uint32(wire.NumPackets(len(sl.resp), s.dpp)) {
			e.stats.DropMalformed++
			return
		}
		e.sendResp(s, sl, h.PktIndex, h.TxSeq, h.Path, 0)
	case sslotHandling: // a probe while the handler runs: prove we are alive
		e.reply(s, h, wire.TypeCR, wire.FlagPending, 0)
	case sslotNacked:
		e.sendNack(s, h, sl.code)
	default:
		e.stats.DropStale++
	}
}

// onCancel drops a request the client abandoned, wherever it is: partial
// reassembly is freed, a running handler is told (EventRequestCanceled), a
// stored response is discarded. The slot then waits for the next number.
func (e *Engine) onCancel(s *session, h *wire.Header) {
	sl := &s.s.slots[s.slotOf(h.ReqNum)]
	if sl.state != sslotIdle && h.ReqNum < sl.reqNum {
		e.stats.DropStale++
		return
	}
	if sl.state != sslotCanceled || sl.reqNum != h.ReqNum {
		e.retireSlot(sl)
		sl.reqNum = h.ReqNum
		sl.state = sslotCanceled
	}
	e.reply(s, h, wire.TypeCancelAck, 0, 0)
}

// onConnect accepts a session, or answers a copy of a connect it already
// accepted, or under a connect flood answers statelessly with a retry
// cookie (admitConnect). It never touches another session (see the wire
// doc).
func (e *Engine) onConnect(now Time, from netip.AddrPort, h *wire.Header, payload []byte) {
	var c wire.Connect
	if err := c.Parse(payload); err != nil || h.Token == 0 {
		e.stats.DropMalformed++
		if err == wire.ErrConnect {
			e.refuse(from, h, c.Session, wire.CodeBadParams)
		}
		return
	}
	key := peerKey{addr: from, num: c.Session, token: h.Token}
	if s := e.byPeer[key]; s != nil { // our ack was lost, or this copy is late
		if e.wrongTag(s) {
			return
		}
		if !s.s.confirmed {
			s.s.opened = now
		}
		e.renewHalfOpen(now, s)
		e.sendConnectAck(s, h)
		return
	}
	proven, code, retry := e.admitConnect(now, from, h, &c)
	switch {
	case retry:
		e.sendRetry(now, from, h, &c)
		return
	case code != wire.CodeOK:
		e.refuse(from, h, c.Session, code)
		return
	}
	// One allocation for both halves, which every request reads.
	both := &struct {
		s  session
		ss serverSide
	}{}
	s := &both.s
	*s = session{peer: from, remote: c.Session, peerToken: h.Token, up: true, lastHeard: now, tag: e.rxTag}
	credits := s.negotiate(&e.cfg, &c)
	// No slots yet: they come at confirmation (establish), once the
	// client has proven it receives at its address.
	both.ss = serverSide{key: key, metered: e.metered(from), opened: now}
	s.s = &both.ss
	e.newSession(s)
	e.byPeer[key] = s
	e.serverSessions++
	if proven {
		e.provenOpen.push(s, now.Add(e.cfg.HalfOpenTimeout))
	} else {
		e.halfOpen.push(s, now.Add(e.cfg.HalfOpenTimeout))
	}
	if e.nextSweep == Never {
		e.nextSweep = now.Add(e.cfg.IdleTimeout / 4)
	}
	s.s.credits = credits
	e.sendConnectAck(s, h)
	e.emitEvent(Event{Type: EventSessionAccepted, Session: s.id(), Peer: from, SessionTag: s.tag})
}

// sendConnectAck answers a connect with the negotiated parameters.
func (e *Engine) sendConnectAck(s *session, in *wire.Header) {
	h := wire.Header{Type: wire.TypeConnectAck, Session: s.remote, Token: s.peerToken, TxSeq: in.TxSeq}
	if !s.s.confirmed {
		h.Flags = wire.FlagConfirm // confirm at once, or be reaped (halfopen.go)
	}
	c := wire.Connect{Session: s.num, Window: uint16(s.window), Credits: uint16(s.s.credits),
		MaxMsgSize: uint32(s.maxMsg), MaxData: uint16(s.dpp), Token: s.token}
	e.emitConnect(s.peer, &h, &c, nil, s.tag)
}

// refuse answers a connect with a refusal code.
func (e *Engine) refuse(to netip.AddrPort, in *wire.Header, clientNum uint32, code uint8) {
	h := wire.Header{Type: wire.TypeConnectAck, Code: code, Session: clientNum, Token: in.Token, TxSeq: in.TxSeq}
	e.emitConnect(to, &h, &wire.Connect{}, nil, e.rxTag)
}
