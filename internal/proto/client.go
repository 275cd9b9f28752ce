package proto

import (
	"fmt"
	"net/netip"

	"github.com/erpc-go/erpc/internal/wire"
)

// Connect opens a client session to the engine at addr. Calls may be started
// on it at once; they wait in the backlog until the handshake completes.
// EventSessionUp or EventSessionDown reports the outcome.
func (e *Engine) Connect(now Time, addr netip.AddrPort) SessionID {
	return e.ConnectTagged(now, addr, 0)
}

// ConnectTagged is Connect for a driver that tags its datagrams
// (ReceiveTagged): the session sends under tag and takes packets under
// tag only.
func (e *Engine) ConnectTagged(now Time, addr netip.AddrPort, tag uint64) SessionID {
	e.touch(now)
	// One allocation for both halves: a call reads both, and adjacent
	// they share cache lines (and the hardware's next-line prefetch).
	both := &struct {
		s session
		c clientSide
	}{}
	s := &both.s
	s.peer, s.lastHeard, s.tag = addr, now, tag
	s.c = &both.c
	s.c.waitStart = now
	s.c.connectDue = now.Add(e.cfg.FailureTimeout)
	s.c.lastSent = now
	s.c.pacedUntil = Never
	if e.cfg.Uncongested != nil && e.cfg.Uncongested(addr) {
		// No network between: a datagram is lost only to a full socket
		// buffer, which credits prevent, and what delays a reply is the
		// host (a descheduled process, for milliseconds). The timeout
		// starts at sameHostRTO rather than at MinRTO.
		s.c.noCC = true
		s.c.rtoFloor = min(sameHostRTO, e.cfg.MaxRTO)
	}
	if e.cfg.NoCongestionControl {
		s.c.noCC = true
	}
	if e.cfg.Reliable != nil && e.cfg.Reliable(addr) {
		// Our transport delivers what we send; the peer's replies cross
		// its own, which may not keep that promise (a fault injector
		// wrapped around it, a peer that drops on a full ring). The
		// timer stays as a safety net at leanRTO, far above any stall.
		s.c.lean, s.c.noCC = true, true
		s.c.rtoFloor = min(max(s.c.rtoFloor, leanRTO), e.cfg.MaxRTO)
	}
	s.c.floorBase = s.c.rtoFloor
	e.newSession(s)
	s.c.offer = offer(&e.cfg, s.num, e.cfg.Window, e.cfg.Credits)
	e.sendConnect(now, s)
	e.schedule(s)
	return s.id()
}

// sendConnect sends the session's connect, with the server's retry cookie
// if it asked for one.
func (e *Engine) sendConnect(now Time, s *session) {
	h := wire.Header{Type: wire.TypeConnect, Session: ^uint32(0), Token: s.token, TxSeq: s.c.nextSeq()}
	var cookie []byte
	if s.c.hasCookie {
		cookie = s.c.cookie[:]
	}
	e.emitConnect(s.peer, &h, &s.c.offer, cookie, s.tag)
	e.stats.ConnectsSent++
	s.c.nextConnect = now.Add(e.cfg.ConnectRetry)
	s.c.lastSent = now
}

// StartCall queues a request of type reqType on the client session id. The
// engine reads req and fills resp (reallocating it if too small) until the
// call completes; the caller must not touch either before the call's
// EventResponse, which carries tag back, and from then on nothing of the
// engine reads them (a packet of req still queued is withdrawn). deadline
// (Never for none) travels with the request: the server's handler sees it.
// StartCall fails at once only if the session is gone or req is larger
// than the session allows (a *SizeError).
func (e *Engine) StartCall(now Time, id SessionID, reqType uint32, req, resp []byte, deadline Time, tag any) (CallID, error) {
	return e.StartCallFlags(now, id, reqType, req, resp, deadline, 0, tag)
}

// StartCallFlags is StartCall with request flags the driver sets on every
// packet of the request: FlagMetadata when req starts with a metadata
// block. Other flags are the engine's and are ignored.
func (e *Engine) StartCallFlags(now Time, id SessionID, reqType uint32, req, resp []byte, deadline Time, flags wire.Flags, tag any) (CallID, error) {
	s := e.session(id)
	if s == nil || s.c == nil {
		return 0, ErrNoSession
	}
	if max := e.callLimit(s); len(req) > max {
		return 0, &SizeError{Size: len(req), Max: max, Request: true}
	}
	cs := s.c
	cid := e.nextCallID
	e.nextCallID++
	cs.pending++
	c := call{id: cid, reqType: reqType, req: req, resp: resp, deadline: deadline, flags: flags & wire.FlagMetadata, tag: tag}
	if i := e.fastSlot(s); i >= 0 {
		cs.slots[i].call = c
		e.startNow(now, s, i)
	} else {
		cs.backlog.push(c)
		e.pump(now, s)
	}
	e.settle(now, s)
	return cid, nil
}

// Cancel abandons a pending call. Its EventResponse (with ErrCanceled) is
// queued at once and the caller owns its buffers again. If the server may
// have seen the request, the slot stays busy until the server confirms it
// dropped it, so at-most-once holds and the session stays usable. Cancel
// reports false if the call is unknown or already completed.
func (e *Engine) Cancel(now Time, id SessionID, cid CallID) bool {
	s := e.session(id)
	if s == nil || s.c == nil {
		return false
	}
	cs := s.c
	if c, ok := cs.backlog.remove(cid); ok {
		cs.pending--
		e.emitEvent(Event{Type: EventResponse, Session: id, Call: c.id, Tag: c.tag, Err: ErrCanceled})
		e.settle(now, s)
		return true
	}
	for i := range cs.slots {
		sl := &cs.slots[i]
		if sl.state != cslotActive || sl.call.id != cid {
			continue
		}
		e.finishCall(s, i, nil, 0, ErrCanceled)
		if sl.sent {
			sl.state = cslotCanceling
			sl.probes = 0
			cs.cancelsN++
			e.sendCancel(now, s, i)
		} else {
			e.releaseSlot(s, i)
		}
		e.pump(now, s)
		e.settle(now, s)
		return true
	}
	return false
}

// MaxMsgSize is the largest message session id carries: the smaller of
// the two ends' limits once it is up, this engine's before; 0 if there is
// no such session.
func (e *Engine) MaxMsgSize(id SessionID) int {
	s := e.session(id)
	if s == nil {
		return 0
	}
	if s.up || s.s != nil {
		return s.maxMsg
	}
	return e.cfg.MaxMsgSize
}

// callLimit is the largest request session s takes: the session's
// negotiated maximum once up, ours before.
func (e *Engine) callLimit(s *session) int {
	if s.up {
		return s.maxMsg
	}
	return e.cfg.MaxMsgSize
}

func (e *Engine) sendCancel(now Time, s *session, i int) {
	sl := &s.c.slots[i]
	h := s.header(wire.TypeCancel, sl.reqNum)
	h.TxSeq = s.c.nextSeq()
	e.emitFor(s, s.peer, &h, nil)
	sl.cancelAt, sl.cancelSeq = now, h.TxSeq
	s.c.lastSent = now
}

// Close ends a session. On a client session every pending call completes
// with ErrSessionClosed and the server is told, or, if the session is
// still connecting, told when its connect-ack comes (abandon.go); on a
// server session the requests being handled are orphaned.
// EventSessionDown follows.
func (e *Engine) Close(now Time, id SessionID) error {
	s := e.session(id)
	if s == nil {
		return ErrNoSession
	}
	switch {
	case s.c != nil && s.up:
		h := s.header(wire.TypeDisconnect, 0)
		e.emitFor(s, s.peer, &h, nil)
	case s.c != nil:
		e.abandonConnect(now, s)
	case s.s != nil:
		e.sendClosing(s)
	}
	e.endSession(now, s, ErrSessionClosed)
	return nil
}

// Alive reports whether session id is still open (or connecting): it has
// not ended, even if its EventSessionDown is still queued.
func (e *Engine) Alive(id SessionID) bool { return e.session(id) != nil }

// CloseAll closes every session, as Close does each: the engine is left
// empty, with every call completed and every request orphaned.
func (e *Engine) CloseAll(now Time) {
	for _, s := range e.sessions {
		if s != nil {
			_ = e.Close(now, s.id())
		}
	}
}

// PeerGone ends every session with the peer at addr, client or server,
// with ErrPeerGone: the transport saw the peer's connection close (a
// crashed process), so there is no point waiting for the failure timeout.
func (e *Engine) PeerGone(now Time, addr netip.AddrPort) {
	for _, s := range e.sessions {
		if s != nil && s.peer == addr {
			e.endSession(now, s, ErrPeerGone)
		}
	}
}

// endSession fails everything a session has pending with err, reports it
// down and frees it.
func (e *Engine) endSession(now Time, s *session, err error) {
	if s.c != nil {
		cs := s.c
		notRun := fmt.Errorf("%w: %w", ErrNotExecuted, err)
		for i := range cs.slots {
			sl := &cs.slots[i]
			if sl.state != cslotActive {
				continue
			}
			if sl.unexecuted || !sl.sent {
				e.completeSlot(s, i, nil, 0, notRun)
			} else {
				e.completeSlot(s, i, nil, 0, err)
			}
		}
		for cs.backlog.n > 0 {
			c := cs.backlog.pop()
			cs.pending--
			e.emitEvent(Event{Type: EventResponse, Session: s.id(), Call: c.id, Tag: c.tag, Err: notRun})
		}
	} else {
		e.endServerSession(now, s)
	}
	e.emitEvent(Event{Type: EventSessionDown, Session: s.id(), Peer: s.peer, Err: err, SessionTag: s.tag,
		Server: s.c == nil, WasUp: s.up})
	e.freeSession(now, s)
}

// completeSlot ends slot i's call and frees the slot.
func (e *Engine) completeSlot(s *session, i int, data []byte, status uint8, err error) {
	e.finishCall(s, i, data, status, err)
	e.releaseSlot(s, i)
}

// finishCall queues slot i's EventResponse and forgets the call's buffers.
func (e *Engine) finishCall(s *session, i int, data []byte, status uint8, err error) {
	cs := s.c
	sl := &cs.slots[i]
	cs.dropSlotRecords(i)
	if sl.txRound == e.round && len(sl.call.req) > 0 {
		e.withdraw(sl.call.req) // the caller may reuse req the moment it hears
	}
	ev := e.newEvent(EventResponse)
	ev.Session, ev.Call, ev.Tag, ev.Data, ev.Status = s.id(), sl.call.id, sl.call.tag, data, status
	ev.Err, ev.Retransmits, ev.Meta = err, sl.retx, err == nil && sl.respMeta
	sl.call = call{}
	cs.pending--
}

// releaseSlot frees slot i for the next call. If the server may have seen
// the current number, the slot moves on to the next one of its class, which
// tells the server it may forget the old response.
func (e *Engine) releaseSlot(s *session, i int) {
	sl := &s.c.slots[i]
	if sl.sent {
		sl.reqNum += uint64(s.window)
		sl.sent = false
	}
	sl.state = cslotFree
	s.c.live.clear(uint32(i))
	s.c.free.push(i)
	sl.unexecuted = false
	sl.reqAcked.shrink(16)
	sl.respGot.shrink(16)
}

// settle updates what depends on whether the session waits for anything:
// the failure clock and the timer.
func (e *Engine) settle(now Time, s *session) {
	if e.sessions[s.num] != s {
		return
	}
	cs := s.c
	switch busy := cs.busy() || !s.up; {
	case busy && cs.waitStart == Never:
		cs.waitStart = now
	case !busy:
		cs.waitStart = Never
	}
	e.markStale(s)
}
