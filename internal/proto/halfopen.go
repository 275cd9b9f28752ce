package proto

import (
	"net/netip"

	"github.com/erpc-go/erpc/internal/wire"
)

// halfOpenList holds server sessions not confirmed yet by a packet
// carrying the server's token, which all end HalfOpenTimeout after they
// entered the list unless confirmed. An engine has two. Engine.halfOpen
// holds the half-open ones, made by a connect without a cookie: anyone can
// send a connect from any source address, so these are the sessions a
// flood of forged connects makes, and they are bounded
// (Config.MaxHalfOpen). Engine.provenOpen holds those made by a connect
// with a valid cookie: their source receives, so they are not bounded
// apart (a real client must get one however many half-open ones there
// are), but a client that never confirms one costs the server only until
// it is reaped.
//
// Each session expires HalfOpenTimeout after it entered the list
// (serverSide.halfDue), and whatever renews one moves it to the back, so
// the list stays in expiry order and its head is the next to expire: the
// reaper stops at the first unexpired session without skipping any. It
// is intrusive (serverSide.halfPrev/halfNext), so removing a session that
// confirms costs nothing.
type halfOpenList struct {
	head, tail *session
	n          int
}

// push appends s, which expires at due: no earlier than any session in
// the list, which the one timeout for all ensures.
func (l *halfOpenList) push(s *session, due Time) {
	s.s.unconfirmedIn, s.s.halfDue = l, due
	s.s.halfPrev, s.s.halfNext = l.tail, nil
	if l.tail != nil {
		l.tail.s.halfNext = s
	} else {
		l.head = s
	}
	l.tail = s
	l.n++
}

func (l *halfOpenList) remove(s *session) {
	if s.s.unconfirmedIn != l {
		return
	}
	if p := s.s.halfPrev; p != nil {
		p.s.halfNext = s.s.halfNext
	} else {
		l.head = s.s.halfNext
	}
	if n := s.s.halfNext; n != nil {
		n.s.halfPrev = s.s.halfPrev
	} else {
		l.tail = s.s.halfPrev
	}
	s.s.unconfirmedIn, s.s.halfPrev, s.s.halfNext = nil, nil, nil
	l.n--
}

// deadline is when the list's oldest session expires, or Never. It is
// the list's own record, not lastHeard: a refresh that bypassed the list
// would otherwise stall the reaper at a session that stays fresh, with
// every forged one behind it kept alive.
func (l *halfOpenList) deadline() Time {
	if l.head == nil {
		return Never
	}
	return l.head.s.halfDue
}

// unlist takes s off whichever list of unconfirmed sessions it is in.
func (e *Engine) unlist(s *session) {
	if l := s.s.unconfirmedIn; l != nil {
		l.remove(s)
	}
}

// establish makes s a full session once a packet carrying the server's
// token proves its client receives at its address: it gets its slots
// here, not at the connect, so that an unconfirmed session, which anyone
// can make from a forged source, costs the same whatever window it asks
// for (Window slots of 80 B would make a forged session cost 80 KiB at a
// Window of 1024). Nothing reads the slots before: every packet that
// does (request, RFR, cancel) confirms its session first (serverReceive).
func (e *Engine) establish(now Time, s *session) {
	s.s.slots = make([]serverSlot, s.window)
	e.unlist(s)
	e.confirm(now, s)
}

// halfOpenDeadline is when the next unconfirmed session expires, or Never.
func (e *Engine) halfOpenDeadline() Time {
	return minTime(e.halfOpen.deadline(), e.provenOpen.deadline())
}

// reapHalfOpen ends the unconfirmed sessions older than HalfOpenTimeout.
// A real client confirms one round trip after the connect-ack (at once,
// with a ping, if it has nothing to send: the ack says FlagConfirm), and
// resends its connect until it has the ack, which renews the session; one
// that has not confirmed by then is a forgery or a late copy, or lost its
// confirmation and will hear the closing reset (or a reset later) and
// connect again.
func (e *Engine) reapHalfOpen(now Time) {
	for _, l := range [...]*halfOpenList{&e.halfOpen, &e.provenOpen} {
		for l.head != nil && now >= l.deadline() {
			e.endHalfOpen(now, l.head)
		}
	}
}

func (e *Engine) endHalfOpen(now Time, s *session) {
	e.stats.HalfOpenReaped++
	e.sendClosing(s)
	e.endSession(now, s, ErrServerIdle)
}

// renewHalfOpen gives a half-open session whose connect came again (its
// ack was lost) a full HalfOpenTimeout from now to be confirmed: else a
// client whose acks were lost for a while might get one just before the
// session is reaped. The bound is unaffected: a forger who repeats its
// connects keeps its half-open sessions as long, and as many, as one who
// sends new ones.
func (e *Engine) renewHalfOpen(now Time, s *session) {
	if l := s.s.unconfirmedIn; l != nil {
		l.remove(s)
		s.lastHeard = now
		l.push(s, now.Add(e.cfg.HalfOpenTimeout))
	}
}

// admitConnect decides what a connect that names no existing session
// gets: a session, made half open unless the connect carried a valid
// cookie (proven), or a refusal code, or a retry (CodeRetry), which keeps
// no state. Under pressure (the half-open sessions at their bound, or the
// table full) only a proven connect gets a session; if the table is full
// it takes the place of the oldest half-open one.
func (e *Engine) admitConnect(now Time, from netip.AddrPort, h *wire.Header, c *wire.Connect) (proven bool, code uint8, retry bool) {
	if e.cfg.NotServing {
		return false, wire.CodeNotServing, false
	}
	proven = c.HasCookie && e.cookies.valid(now, from, c.Session, h.Token, c.Cookie)
	if c.HasCookie && !proven {
		e.stats.BadCookies++ // from another address or client, forged, or expired: as if none
	}
	if proven && !e.cookies.spend(c.Cookie) {
		// A copy of a connect whose session has ended (a duplicate, or a
		// replay from the path): the cookie has made its session, and
		// counts as none, so the copy gets a half-open session, bounded
		// and soon reaped, or under pressure a retry, never a proven one.
		// A real client whose cookie session was reaped before it had
		// the ack is retried too, and gets a session with the cookie of
		// the next bucket (its connect lasts up to 4 x FailureTimeout).
		e.stats.SpentCookies++
		proven = false
	}
	full := e.serverSessions >= e.cfg.MaxSessions
	switch {
	case full && e.halfOpen.n == 0:
		// Every session is confirmed or proven: a real client's, which
		// no newcomer may displace.
		return false, wire.CodeTooManySessions, false
	case proven:
		if full {
			e.endHalfOpen(now, e.halfOpen.head)
		}
		return true, wire.CodeOK, false
	case full || e.halfOpen.n >= e.cfg.MaxHalfOpen:
		return false, 0, true
	}
	return false, wire.CodeOK, false
}

// sendRetry answers a connect with CodeRetry: the server's limits and the
// cookie the client must echo. Nothing of the connect is kept; the cookie
// goes out from a per-round buffer (Engine.cookieOut), so a flood of them
// allocates nothing once the buffer has grown.
func (e *Engine) sendRetry(now Time, from netip.AddrPort, in *wire.Header, c *wire.Connect) {
	ck := e.cookies.mint(now, from, c.Session, in.Token)
	at := len(e.cookieOut)
	e.cookieOut = append(e.cookieOut, ck[:]...)
	h := wire.Header{Type: wire.TypeConnectAck, Code: wire.CodeRetry, Session: c.Session, Token: in.Token, TxSeq: in.TxSeq}
	lim := offer(&e.cfg, 0, e.cfg.Window, e.cfg.Credits)
	e.emitConnect(from, &h, &lim, e.cookieOut[at:len(e.cookieOut):len(e.cookieOut)], e.rxTag)
	e.stats.RetriesSent++
}
