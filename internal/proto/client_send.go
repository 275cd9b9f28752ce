package proto

import (
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// pump moves backlogged calls into free slots and sends what credits and
// congestion control allow. New packets leave in the order their slots got
// them (a call's start, a response's first packet), as eRPC's stall queue
// does: when the window holds calls back, they still reach the server in
// the order they were made, which pipelined users such as raft rely on.
func (e *Engine) pump(now Time, s *session) {
	if !s.up {
		return
	}
	cs := s.c
	for cs.backlog.n > 0 {
		i := cs.free.pop()
		if i < 0 {
			break
		}
		cs.slots[i].call = cs.backlog.pop()
		if e.startSlot(s, i) {
			cs.stamp(i)
		}
	}
	cs.pacedUntil = Never
	for cs.avail > 0 {
		i := cs.sendq.oldest(cs.slots)
		if i < 0 || !e.maySend(now, cs) {
			return
		}
		e.sendSlot(now, s, i)
		if cs.slots[i].hasNew() {
			return // held back by credits, the window or the pacer
		}
	}
}

// hasNew reports whether the slot has a packet never sent: a request
// packet, or a request for a response packet.
func (sl *clientSlot) hasNew() bool {
	if sl.state != cslotActive {
		return false
	}
	if sl.respSize < 0 {
		return sl.reqNext < sl.reqPkts
	}
	return sl.rfrNext < sl.respPkts
}

// maySend reports whether a new packet may leave now: a credit is free
// and congestion control agrees. An uncongested session (the bypass) is
// limited by its credits alone, as if there were no congestion control;
// otherwise by the window, and by the pacer, which also notes when to come
// back. Retransmissions and probes are not asked: they reuse a credit
// already held, and say the window is already counting them.
func (e *Engine) maySend(now Time, cs *clientSide) bool {
	if cs.avail == 0 {
		return false
	}
	if cs.noCC || cs.cc.Bypass() {
		return true
	}
	if cs.credits-cs.avail >= cs.cc.Allowed() {
		return false // the next reply frees room
	}
	if t := Time(cs.cc.NextSend(int64(now))); t > now {
		cs.pacedUntil = t
		return false
	}
	return true
}

// startSlot starts the call the caller put into free slot i, and reports
// whether the slot then has the call's request to send (the caller
// queues it): a request larger than the session takes is refused at
// once instead.
func (e *Engine) startSlot(s *session, i int) bool {
	sl := &s.c.slots[i]
	c := &sl.call
	s.c.live.set(uint32(i))
	if len(c.req) > s.maxMsg { // the server accepts less than we thought
		// A refusal of this call alone, as StartCall's: the session
		// goes on. Not ErrNotExecuted, which says the session ended
		// (and another would refuse the call too).
		sl.state = cslotActive
		e.completeSlot(s, i, nil, 0, &SizeError{Size: len(c.req), Max: s.maxMsg, Request: true})
		return false
	}
	sl.state = cslotActive
	sl.status = 0
	sl.probes = 0
	sl.retx = 0
	sl.reqPkts = uint32(wire.NumPackets(len(c.req), s.dpp))
	sl.reqNext = 0
	sl.reqAcked.reset(sl.reqPkts)
	sl.reqAckedN = 0
	sl.respSize = -1
	sl.respPkts = 0
	sl.respGotN = 0
	sl.rfrNext = 1
	sl.lastProgress = Never
	return true
}

// fastSlot is StartCall's one-packet path: for a call that finds no
// call waiting before it and nothing queued to send, it returns a free
// slot for the caller to put the call in and start with startNow, or -1:
// the call then goes through the backlog and pump, the general path.
// Order is kept: nothing is waiting to go before it.
func (e *Engine) fastSlot(s *session) int {
	cs := s.c
	if !s.up || cs.backlog.n > 0 || cs.sendq.n > 0 || e.generalStart {
		return -1
	}
	i := cs.free.pop()
	if i >= 0 {
		e.fastStarts++
	}
	return i
}

// startNow starts the call put into slot i (fastSlot) and sends what
// credits and congestion control let go at once, without the backlog
// and the send queue; what they hold back is queued as pump would.
func (e *Engine) startNow(now Time, s *session, i int) {
	if !e.startSlot(s, i) {
		return
	}
	cs := s.c
	cs.pacedUntil = Never
	e.sendSlot(now, s, i)
	if cs.slots[i].hasNew() {
		cs.stamp(i)
	}
}

// sendSlot sends slot i's next new packets while credits last.
func (e *Engine) sendSlot(now Time, s *session, i int) {
	cs := s.c
	sl := &cs.slots[i]
	if sl.state != cslotActive {
		return
	}
	if sl.respSize < 0 {
		for sl.reqNext < sl.reqPkts && e.maySend(now, cs) {
			cs.avail--
			e.transmit(now, s, i, kindReq, sl.reqNext, 0, -1)
			sl.reqNext++
		}
		return
	}
	for sl.rfrNext < sl.respPkts && e.maySend(now, cs) {
		cs.avail--
		e.transmit(now, s, i, kindRFR, sl.rfrNext, 0, -1)
		sl.rfrNext++
	}
}

// transmit sends packet (kind, idx) of slot i with a fresh sequence number
// and records it in flight. The caller has set aside its credit.
func (e *Engine) transmit(now Time, s *session, i int, kind pktKind, idx uint32, retx uint8, lostPath int) {
	cs := s.c
	sl := &cs.slots[i]
	h := s.header(wire.TypeRFR, sl.reqNum)
	h.ReqType = sl.call.reqType
	h.PktIndex = idx
	h.TxSeq = cs.nextSeq()
	h.Path = e.choosePath(now, s, lostPath)
	var payload []byte
	if kind == kindReq {
		h.Type = wire.TypeReq
		h.Flags |= sl.call.flags
		h.MsgSize = uint32(len(sl.call.req))
		lo, hi := dataRange(idx, len(sl.call.req), s.dpp)
		payload = sl.call.req[lo:hi]
		sl.txRound = e.round
		if d := sl.call.deadline; d != Never {
			h.Flags |= wire.FlagDeadline
			h.HoldMicros = wire.EncodeTimeout(d.Sub(now))
		}
	}
	e.emitOnPath(s, &h, payload)
	if !cs.noCC {
		cs.cc.OnSend(int64(now), wire.HeaderLen+len(payload), int(h.Path))
	}
	cs.flight.add(inflight{seq: h.TxSeq, slot: uint16(i), kind: kind, retx: retx, path: h.Path, bytes: uint16(wire.HeaderLen + len(payload)), idx: idx, sentAt: now})
	sl.nflight++
	if !sl.sent {
		sl.firstSent = now
	}
	sl.sent = true
	cs.lastSent = now
	e.lastTransmit = now
	if sl.lastProgress == Never {
		sl.lastProgress = now
	}
}

// retransmit resends in-flight record j, which is presumed lost. The new copy
// inherits the record's credit.
func (e *Engine) retransmit(now Time, s *session, j int) {
	cs := s.c
	r := cs.flight.removeAt(j)
	cs.slots[r.slot].nflight--
	cs.slots[r.slot].retx++
	e.stats.Retransmits++
	if !cs.noCC {
		cs.cc.OnTimeout(int64(now), int(r.path))
	}
	e.transmit(now, s, int(r.slot), r.kind, r.idx, min(r.retx+1, 30), int(r.path))
}

// choosePath picks the path of a client packet: 0 for a session on one
// path; otherwise congestion control's choice (the less queued of two
// random paths), and for a retransmission another path than the one its
// lost copy went on (lost, or -1 for a new packet). Without congestion
// control, the paths in turn.
func (e *Engine) choosePath(now Time, s *session, lost int) uint8 {
	cs := s.c
	switch {
	case cs.paths <= 1:
		return 0
	case cs.noCC:
	case lost >= 0:
		return uint8(cs.cc.RetransmitPath(int64(now), lost, e.cfg.Random()))
	default:
		return uint8(cs.cc.PickPath(int64(now), e.cfg.Random()))
	}
	p := cs.nextPath
	if p == lost {
		p = (p + 1) % cs.paths
	}
	cs.nextPath = (p + 1) % cs.paths
	return uint8(p)
}

// detectLoss resends every in-flight packet that ReorderThreshold later
// packets have overtaken: fast retransmit, long before the RTO. Reordering
// shallower than the threshold (several paths, SRD) is not taken for loss.
func (e *Engine) detectLoss(now Time, s *session) {
	cs := s.c
	thresh := uint32(e.cfg.ReorderThreshold)
	if cs.flight.len() == 0 {
		return
	}
	newest, any := cs.largestAnswered()
	if !any {
		return
	}
	for j := 0; j < cs.flight.len(); {
		r := &cs.flight.recs[j]
		if !seqBefore(r.seq, newest) {
			// Records are in sequence order: none from here on was sent
			// before an answered packet, so none is overtaken (a record
			// retransmitted below moves to the end and stops the walk).
			return
		}
		if cs.overtaken(r.seq, r.path, thresh) {
			e.retransmit(now, s, j)
			continue // the record moved to the end
		}
		j++
	}
}

// clientDeadline is the earliest time s's timer has work.
func (e *Engine) clientDeadline(s *session) Time {
	cs := s.c
	cfg := &e.cfg
	if !s.up {
		return minTime(cs.nextConnect, cs.connectDue)
	}
	d := Never
	if cs.waitStart != Never {
		d = maxTime(s.lastHeard, cs.waitStart).Add(cfg.FailureTimeout)
	}
	rto := cs.rto(cfg)
	loss := cs.rtt.lossDelay(cfg)
	for _, r := range cs.flight.recs {
		d = minTime(d, cs.expiry(&r, rto, cfg))
		if !cs.lean && cs.overtaken(r.seq, r.path, 1) {
			d = minTime(d, r.sentAt.Add(loss))
		}
	}
	for i := cs.nextLive(0); i >= 0; i = cs.nextLive(i + 1) {
		sl := &cs.slots[i]
		switch {
		case sl.waiting():
			d = minTime(d, sl.lastProgress.Add(e.probeDelay(cs, sl.probes)))
		case sl.state == cslotCanceling:
			d = minTime(d, sl.cancelAt.Add(backoff(rto, sl.probes, cfg.MaxRTO)))
		}
	}
	d = minTime(d, cs.pacedUntil)
	switch {
	case cs.pingOut:
		d = minTime(d, cs.pingSentAt.Add(backoff(rto, cs.pingTries, cfg.FailureTimeout/4)))
	case !cs.busy():
		d = minTime(d, maxTime(cs.lastSent, s.lastHeard).Add(cfg.KeepaliveInterval))
	}
	return d
}

// probeDelay is how long a waiting slot stays quiet before it asks the
// server for the response again: the RTO, backing off while the server
// answers "still pending", but often enough to notice a dead server, and
// at least every KeepaliveInterval: a waiting session does not ping, and
// its server ends a session it does not hear from for its IdleTimeout,
// which need only exceed the interval.
func (e *Engine) probeDelay(cs *clientSide, probes uint8) time.Duration {
	return backoff(cs.rto(&e.cfg), probes, min(e.cfg.FailureTimeout/4, e.cfg.KeepaliveInterval))
}

// clientTimer does what is due on client session s.
func (e *Engine) clientTimer(now Time, s *session) {
	cs := s.c
	cfg := &e.cfg
	if !s.up {
		if now >= cs.connectDue {
			e.endSession(now, s, ErrConnectTimeout)
		} else if now >= cs.nextConnect {
			e.sendConnect(now, s)
		}
		return
	}
	if cs.waitStart != Never && now >= maxTime(s.lastHeard, cs.waitStart).Add(cfg.FailureTimeout) {
		e.endSession(now, s, ErrPeerTimeout)
		return
	}
	rto := cs.rto(cfg)
	loss := cs.rtt.lossDelay(cfg)
	expired := false
	for j := 0; j < cs.flight.len(); {
		r := &cs.flight.recs[j]
		if !cs.lean && cs.overtaken(r.seq, r.path, 1) && now >= r.sentAt.Add(loss) {
			e.retransmit(now, s, j)
			continue
		}
		if !expired && now >= cs.expiry(r, rto, cfg) {
			expired = true // the oldest only; the others wait again
			cs.expire(now, r)
			e.retransmit(now, s, j)
			continue
		}
		j++
	}
	if now >= cs.pacedUntil {
		e.pump(now, s) // the pacer lets the next packets go
	}
	for i := cs.nextLive(0); i >= 0; i = cs.nextLive(i + 1) {
		sl := &cs.slots[i]
		switch {
		case sl.waiting() && now >= sl.lastProgress.Add(e.probeDelay(cs, sl.probes)):
			e.probe(now, s, i)
		case sl.state == cslotCanceling && now >= sl.cancelAt.Add(backoff(rto, sl.probes, cfg.MaxRTO)):
			sl.probes = min(sl.probes+1, 30)
			e.sendCancel(now, s, i)
		}
	}
	e.keepalive(now, s)
}

// probe asks the server for response packet 0 of a slot whose request it
// has acknowledged: either the response was lost, or the handler is slow and
// the server answers "pending", which proves it is alive.
func (e *Engine) probe(now Time, s *session, i int) {
	cs := s.c
	sl := &cs.slots[i]
	if cs.avail == 0 {
		// Every credit is on the wire, each with its own timer; probe one
		// interval later rather than spin.
		sl.lastProgress = now
		return
	}
	cs.avail--
	e.transmit(now, s, i, kindRFR, 0, sl.probes, -1)
	sl.probes = min(sl.probes+1, 30)
	sl.lastProgress = now
}

// keepalive pings an idle session's server now and then, and resends an
// unanswered ping.
func (e *Engine) keepalive(now Time, s *session) {
	cs := s.c
	cfg := &e.cfg
	switch {
	case cs.pingOut:
		if now < cs.pingSentAt.Add(backoff(cs.rto(cfg), cs.pingTries, cfg.FailureTimeout/4)) {
			return
		}
		cs.pingTries = min(cs.pingTries+1, 30)
	case cs.busy() || now < maxTime(cs.lastSent, s.lastHeard).Add(cfg.KeepaliveInterval):
		return
	default:
		cs.pingTries = 0
	}
	e.sendPing(now, s)
}

// sendPing pings s's server; the pong proves it alive (and measures the
// round trip).
func (e *Engine) sendPing(now Time, s *session) {
	cs := s.c
	cs.pingOut = true
	cs.pingSeq = cs.nextSeq()
	cs.pingSentAt = now
	cs.lastSent = now
	h := s.header(wire.TypePing, 0)
	h.TxSeq = cs.pingSeq
	e.emitFor(s, s.peer, &h, nil)
	if cs.waitStart == Never {
		cs.waitStart = now
	}
}
