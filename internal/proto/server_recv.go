package proto

import (
	"net/netip"

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
	if s == nil || s.s == nil || s.token != h.Token || s.peer != from {
		e.stats.DropUnknownSession++
		if h.Type != wire.TypeDisconnect {
			e.sendReset(from, h, s)
		}
		return
	}
	s.lastHeard = now
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

// reply sends a header-only answer to client packet in.
func (e *Engine) reply(s *session, in *wire.Header, t wire.Type, flags wire.Flags, code uint8) {
	h := s.header(t, in.ReqNum)
	h.Flags, h.Code = flags, code
	h.ReqType, h.PktIndex, h.TxSeq, h.Path = in.ReqType, in.PktIndex, in.TxSeq, in.Path
	e.emit(s.peer, &h, nil)
}

// sendReset tells a client that this engine has no session matching its
// packet: the server restarted, reaped the session, or the token is stale.
func (e *Engine) sendReset(to netip.AddrPort, in *wire.Header, known *session) {
	code := wire.CodeUnknownSession
	if known != nil {
		code = wire.CodeStaleToken
	}
	h := wire.Header{Type: wire.TypeReset, Code: code, Session: in.Session, Token: in.Token,
		ReqNum: in.ReqNum, TxSeq: in.TxSeq, Path: in.Path}
	e.emit(to, &h, nil)
	e.stats.ResetsSent++
}

// onReq handles a request data packet.
func (e *Engine) onReq(now Time, s *session, h *wire.Header, payload []byte) {
	sl := &s.s.slots[h.ReqNum%uint64(s.window)]
	if int(h.MsgSize) > s.maxMsg {
		if sl.state == sslotIdle || h.ReqNum > sl.reqNum {
			e.retireSlot(sl)
			e.nack(s, sl, h, wire.CodeMsgTooLarge)
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
			e.nack(s, sl, h, wire.CodeServerFull)
			return
		}
		sl.reqNum = h.ReqNum
		sl.state = sslotReceiving
		sl.req = e.newRequest(s, h)
	case h.ReqNum < sl.reqNum:
		e.stats.DropStale++
		return
	}
	switch sl.state {
	case sslotReceiving:
		e.reassemble(now, s, sl, h, payload)
	case sslotHandling:
		e.reply(s, h, wire.TypeCR, wire.FlagPending, 0)
	case sslotResponded: // the client lost response packet 0
		e.sendResp(s, sl, 0, h.TxSeq, h.Path, 0)
	case sslotNacked:
		e.reply(s, h, wire.TypeNack, 0, sl.code)
	default: // canceled: a copy that was still on the wire
		e.stats.DropStale++
	}
}

// nack refuses request h in slot sl and remembers it, so duplicates get the
// same answer.
func (e *Engine) nack(s *session, sl *serverSlot, h *wire.Header, code uint8) {
	sl.reqNum = h.ReqNum
	sl.state = sslotNacked
	sl.code = code
	e.reply(s, h, wire.TypeNack, 0, code)
	e.stats.NacksSent++
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
		e.reply(s, h, wire.TypeCR, 0, 0)
		return
	}
	sl.state = sslotHandling
	r.state = reqHandling
	r.owedSeq, r.owedIdx, r.owedPath = h.TxSeq, h.PktIndex, h.Path
	r.arrived = now
	e.owe(r)
	e.emitEvent(Event{Type: EventRequest, Session: s.id(), Req: r.handle()})
}

// onRFR sends the response packet the client asks for.
func (e *Engine) onRFR(s *session, h *wire.Header) {
	sl := &s.s.slots[h.ReqNum%uint64(s.window)]
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
		e.reply(s, h, wire.TypeNack, 0, sl.code)
	default:
		e.stats.DropStale++
	}
}

// onCancel drops a request the client abandoned, wherever it is: partial
// reassembly is freed, a running handler is told (EventRequestCanceled), a
// stored response is discarded. The slot then waits for the next number.
func (e *Engine) onCancel(s *session, h *wire.Header) {
	sl := &s.s.slots[h.ReqNum%uint64(s.window)]
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

// onConnect accepts a session, or answers a duplicate connect again.
func (e *Engine) onConnect(now Time, from netip.AddrPort, h *wire.Header, payload []byte) {
	var c wire.Connect
	if err := c.Parse(payload); err != nil {
		e.stats.DropMalformed++
		if err == wire.ErrConnect {
			e.refuse(from, h, c.Session, wire.CodeBadParams)
		}
		return
	}
	key := peerKey{addr: from, num: c.Session}
	if s := e.byPeer[key]; s != nil {
		if s.token == h.Token { // our ack was lost
			s.lastHeard = now
			e.sendConnectAck(s, h)
			return
		}
		// The same client session number with a new token: the client
		// restarted or reused the number; the old session is dead.
		e.endSession(now, s, ErrSessionReset)
	}
	if e.serverSessions >= e.cfg.MaxSessions {
		e.refuse(from, h, c.Session, wire.CodeTooManySessions)
		return
	}
	s := &session{peer: from, remote: c.Session, token: h.Token, up: true, lastHeard: now}
	credits := s.negotiate(&e.cfg, &c)
	s.s = &serverSide{key: key, slots: make([]serverSlot, s.window)}
	e.newSession(s)
	e.byPeer[key] = s
	e.serverSessions++
	if e.nextSweep == Never {
		e.nextSweep = now.Add(e.cfg.IdleTimeout / 4)
	}
	s.s.credits = credits
	e.sendConnectAck(s, h)
	e.emitEvent(Event{Type: EventSessionAccepted, Session: s.id(), Peer: from})
}

// sendConnectAck answers a connect with the negotiated parameters.
func (e *Engine) sendConnectAck(s *session, in *wire.Header) {
	h := wire.Header{Type: wire.TypeConnectAck, Session: s.remote, Token: s.token, TxSeq: in.TxSeq}
	c := wire.Connect{Session: s.num, Window: uint16(s.window), Credits: uint16(s.s.credits),
		MaxMsgSize: uint32(s.maxMsg), MaxData: uint16(s.dpp)}
	e.emitConnect(s.peer, &h, &c)
}

// refuse answers a connect with a refusal code.
func (e *Engine) refuse(to netip.AddrPort, in *wire.Header, clientNum uint32, code uint8) {
	h := wire.Header{Type: wire.TypeConnectAck, Code: code, Session: clientNum, Token: in.Token, TxSeq: in.TxSeq}
	e.emitConnect(to, &h, &wire.Connect{})
}
