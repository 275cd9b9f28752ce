package proto

import (
	"net/netip"
	"slices"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// Engine is one endpoint's protocol state: its client and server sessions,
// their slots, credits and timers. It is not safe for concurrent use: one
// goroutine (the endpoint's event loop) owns it.
//
// The driver loop is:
//
//	for each received datagram: e.Receive(now, from, pkt)
//	e.Tick(now)
//	for ev := e.TakeEvent(); ev != nil; ev = e.TakeEvent() { handle *ev }
//	send e.Outgoing(now)
//	sleep until e.NextDeadline() or a datagram arrives
//
// Handlers and continuations may call StartCall, Respond, Reject and Cancel
// while events are being drained.
type Engine struct {
	cfg Config

	sessions []*session // indexed by local session number; nil when free
	freedAt  []Time     // per number: when it last held a session (born if never)
	freeNums []uint32   // released numbers, reused oldest first
	freeHead int
	byRemote map[remoteKey]*session // client sessions that are up, to route resets
	byPeer   map[peerKey]*session   // server sessions, by the connect that made them
	byClient map[clientKey]*session // confirmed server sessions, by client number

	// draining: the endpoint is shutting down (Drain); every server
	// packet carries wire.FlagDraining.
	draining bool

	born    Time // the first instant this engine saw: no session of it is older
	bornSet bool

	timers timerHeap
	due    []*session // scratch for Tick
	// Client sessions whose deadline may have moved since it was last
	// computed: a deadline is a walk over the session's slots and packets
	// in flight, so it is taken once per session per batch (in Tick and
	// NextDeadline), not once per packet.
	stale     []*session
	nextSweep Time
	// poolSweepAt is when the pool next gives back idle buffers; Never
	// while it holds none (pool_release.go).
	poolSweepAt     Time
	releasedPending int // bytes the pool gave back since PoolReleased
	// lastTransmit is when a client last sent a request's packet (or a
	// probe for its response): see LastTransmit.
	lastTransmit Time

	out, outSpare []Packet
	round         uint64 // Outgoing calls so far: packets queued now go out with the next
	events        []Event
	evHead        int
	owed          []*Request // delivered this round, reply still owed
	holes         int        // reply places given up, packets withdrawn this round
	// Memory retired while a queued packet may still point into it: it goes
	// back to the pool only once that packet has been sent.
	freeLater, freeNext [][]byte
	// Cookies of the retry connect-acks queued this round, and last
	// round's, which the packets Outgoing returned point into.
	cookieOut, cookieSent []byte

	reqPool        []*Request
	bufs           bufPool
	heldReqs       int
	parkedReqs     int // the part of heldReqs parked (Park): not counted against MaxHeldRequests
	heldBytes      int // capacity of request buffers and saved responses
	savedBytes     int // the part held by saved responses
	serverSessions int
	halfOpen       halfOpenList // unconfirmed server sessions made without a cookie
	provenOpen     halfOpenList // unconfirmed server sessions made with a valid cookie
	cookies        cookieJar
	nextCallID     CallID

	hdr  wire.Header    // scratch for parsing
	from netip.AddrPort // the source of the packet being handled: replies go there
	// rxTag is the tag the driver received the packet being handled
	// under (ReceiveTagged), 0 outside Receive: a packet answering it
	// that belongs to no session goes out under it.
	rxTag uint64
	stats Stats
	nacks perSecond // NACKs sent, for Stats.NacksLastSecond
	share shareMeter
	// Client sessions closed while their connect was unanswered, whose
	// late connect-ack gets a disconnect (abandon.go).
	abandoned []abandonedConnect

	// fastStarts counts the calls StartCall sent on its one-packet path
	// (startNow); generalStart, set by tests only, turns that path off,
	// so that a test can compare the two (fastpath_test.go).
	fastStarts   int
	generalStart bool
}

// peerKey identifies a connect from the server's side: the client's
// address, its session number and its token. Copies of one connect share
// it; a connect from a new client incarnation, or a late one from an old
// incarnation, does not.
type peerKey struct {
	addr  netip.AddrPort
	num   uint32
	token uint32
}

// clientKey is a client session number at an address, whatever its token.
type clientKey struct {
	addr netip.AddrPort
	num  uint32
}

// remoteKey is what a reset names: the server's address, its session number
// and its token.
type remoteKey struct {
	addr  netip.AddrPort
	num   uint32
	token uint32
}

// New returns an engine with cfg's limits (zero fields take defaults).
func New(cfg Config) *Engine {
	cfg = cfg.withDefaults()
	e := &Engine{
		cfg:          cfg,
		byRemote:     make(map[remoteKey]*session),
		byPeer:       make(map[peerKey]*session),
		byClient:     make(map[clientKey]*session),
		nextSweep:    Never,
		poolSweepAt:  Never,
		lastTransmit: Never,
		cookies:      newCookieJar(cfg.CookieSeed),
	}
	e.bufs.limit = cfg.PoolBytes
	e.nextCallID = 1
	return e
}

// touch records the first instant the engine sees: every session it ever
// has is younger, which is what a reset's "no such session for" bound
// rests on.
func (e *Engine) touch(now Time) {
	if !e.bornSet {
		e.born, e.bornSet = now, true
	}
}

// Receive processes one datagram from addr. pkt is not retained: the engine
// copies what it keeps. Malformed or unexpected datagrams are dropped and
// counted in Stats, never answered with a panic.
func (e *Engine) Receive(now Time, from netip.AddrPort, pkt []byte) {
	e.ReceiveTagged(now, from, pkt, 0)
}

// ReceiveTagged is Receive for a driver that knows more about where a
// datagram came from than its address: tag names it (a TLS association,
// say; 0 for none). A server session keeps the tag of the connect that
// made it and takes packets under that tag only; a client session, the
// tag Connect was given. A packet under another tag is dropped
// (Stats.DropWrongTag): with the tag an authenticated peer, one peer
// cannot reach another's session even if it learns its token. Every
// packet the engine sends carries its session's tag (Packet.Tag), or,
// answering a packet of no session, that packet's.
func (e *Engine) ReceiveTagged(now Time, from netip.AddrPort, pkt []byte, tag uint64) {
	e.touch(now)
	e.stats.PacketsIn++
	e.from = from
	e.rxTag = tag
	h := &e.hdr
	payload, err := h.Parse(pkt)
	switch {
	case err != nil:
		e.stats.DropMalformed++
	case h.Type.FromClient():
		e.serverReceive(now, from, h, payload)
	default:
		e.clientReceive(now, from, h, payload)
	}
	e.rxTag = 0
}

// wrongTag reports (and counts) a packet for session s received under
// another tag than s's.
func (e *Engine) wrongTag(s *session) bool {
	if s == nil || s.tag == e.rxTag {
		return false
	}
	e.stats.DropWrongTag++
	return true
}

// Tick runs the timers that are due: retransmissions, probes, connect
// retries, keepalives, failure detection and the server's idle sweep.
func (e *Engine) Tick(now Time) {
	e.touch(now)
	e.rescheduleStale()
	due := e.due[:0]
	for e.timers.len() > 0 && e.timers.topDeadline() <= now {
		s := e.timers.pop()
		s.deadline = Never
		due = append(due, s)
	}
	// Reschedule only after all are popped, so a timer that stays due cannot
	// keep this loop spinning.
	for i, s := range due {
		if e.sessions[s.num] == s { // still open
			e.clientTimer(now, s)
		}
		if e.sessions[s.num] == s {
			e.schedule(s)
		}
		due[i] = nil
	}
	e.due = due[:0]
	if now >= e.nextSweep {
		e.sweepIdle(now)
	}
	e.reapHalfOpen(now)
	e.tickPool(now)
}

// NextDeadline is when Tick next has work, or Never.
func (e *Engine) NextDeadline() Time {
	e.rescheduleStale()
	d := minTime(minTime(e.nextSweep, e.poolSweepAt), e.halfOpenDeadline())
	if e.timers.len() > 0 {
		d = minTime(d, e.timers.topDeadline())
	}
	return d
}

// LastTransmit is when this engine's clients last sent a packet of a
// request (first sending or again; Never before the first). An answer
// is due about an RTT later: a loop that parks before it arrives learns of
// it only when it wakes, and the RTT sample then carries the wake-up.
func (e *Engine) LastTransmit() Time { return e.lastTransmit }

// Outgoing returns the datagrams to send now. Before returning it answers,
// with a "pending" credit return, every request delivered since the last
// call whose handler has not responded yet: a slow handler then costs the
// client neither a credit nor a retransmission. The slice, and the message
// buffers its payloads point into, stay valid until the driver calls Outgoing
// again or feeds the engine more input; send them before doing either.
func (e *Engine) Outgoing(now Time) []Packet {
	for _, r := range e.owed {
		if r.owed {
			e.replyPending(now, r)
		}
	}
	clear(e.owed)
	e.owed = e.owed[:0]
	if e.holes > 0 {
		e.out = slices.DeleteFunc(e.out, func(p Packet) bool { return p.headLen == 0 })
		e.holes = 0
	}
	// The packets returned last time have been sent: memory retired while
	// they pointed into it can be reused now.
	for i, b := range e.freeNext {
		e.bufs.put(b)
		e.freeNext[i] = nil
	}
	e.freeNext, e.freeLater = e.freeLater, e.freeNext[:0]
	e.cookieOut, e.cookieSent = e.cookieSent[:0], e.cookieOut
	e.round++
	out := e.out
	e.out, e.outSpare = e.outSpare[:0], out
	return out
}

// withdraw removes from the output queue every packet whose payload points
// into buf, whose owner is taking it back: a caller whose call completed may
// reuse its request buffer at once, so nothing may read it afterwards.
func (e *Engine) withdraw(buf []byte) {
	for i := range e.out {
		p := &e.out[i]
		if p.headLen != 0 && within(p.Payload, buf) {
			p.headLen, p.Payload = 0, nil
			e.holes++
			e.stats.PacketsOut--
		}
	}
}

// owe reserves the place of the reply to the packet that completed r, so
// that whenever the reply is written (by Respond, Reject or Outgoing) it
// leaves in the order of the packets it answers: replies overtaking each
// other would look like loss to the client.
func (e *Engine) owe(r *Request) {
	r.owed = true
	r.outIdx = len(e.out)
	e.out = append(e.out, Packet{})
	e.owed = append(e.owed, r)
}

// owedPacket returns where r's reply goes: its reserved place if still owed
// this round, else a new packet at the end.
func (e *Engine) owedPacket(r *Request) *Packet {
	if !r.owed {
		return e.newPacket()
	}
	r.owed = false
	return &e.out[r.outIdx]
}

// forgive gives up r's reserved reply place; Outgoing removes the hole.
func (e *Engine) forgive(r *Request) {
	if r.owed {
		r.owed = false
		e.holes++
	}
}

// newSession allocates a session number and a random token and installs s
// under them.
func (e *Engine) newSession(s *session) {
	if e.freeHead < len(e.freeNums) {
		s.num = e.freeNums[e.freeHead]
		e.freeHead++
		if e.freeHead == len(e.freeNums) {
			e.freeNums, e.freeHead = e.freeNums[:0], 0
		}
	} else {
		s.num = uint32(len(e.sessions))
		e.sessions = append(e.sessions, nil)
		e.freedAt = append(e.freedAt, e.born)
	}
	var spare uint32
	s.token, spare = e.newToken()
	if s.c != nil {
		// A client's sequence numbers start at random: a reset must echo
		// one in flight to be believed (onReset), which one who has not
		// seen the session's recent packets cannot guess at the first try.
		s.c.txSeq = spare
	}
	s.deadline = Never
	e.sessions[s.num] = s
}

// newToken picks a random nonzero token, and returns the other half of
// the random draw too.
func (e *Engine) newToken() (token, spare uint32) {
	for {
		r := e.cfg.Random()
		if t := uint32(r); t != 0 {
			return t, uint32(r >> 32)
		}
	}
}

// freeSession removes s from every table. Its calls and requests must have
// been settled already.
func (e *Engine) freeSession(now Time, s *session) {
	if e.sessions[s.num] != s {
		return
	}
	e.sessions[s.num] = nil
	e.freedAt[s.num] = now
	e.freeNums = append(e.freeNums, s.num)
	e.timers.remove(s)
	if s.c != nil {
		if k := s.remoteKey(); e.byRemote[k] == s {
			delete(e.byRemote, k)
		}
	}
	if s.s != nil {
		e.unlist(s)
		if e.byPeer[s.s.key] == s {
			delete(e.byPeer, s.s.key)
		}
		if k := s.s.key.client(); e.byClient[k] == s {
			delete(e.byClient, k)
		}
	}
}

// noSessionFor is a lower bound on how long this engine has had no session
// with number num other than the one it has now, if any: the time since the
// number was last freed, or since the engine started.
func (e *Engine) noSessionFor(now Time, num uint32) time.Duration {
	since := e.born
	if int64(num) < int64(len(e.freedAt)) {
		since = e.freedAt[num]
	}
	return now.Sub(since)
}

// lookup returns the open session with number num, or nil.
func (e *Engine) lookup(num uint32) *session {
	if int64(num) >= int64(len(e.sessions)) {
		return nil
	}
	return e.sessions[num]
}

// session finds the session an ID names, or nil if it has ended.
func (e *Engine) session(id SessionID) *session {
	s := e.lookup(id.Num())
	if s == nil || s.token != id.token() {
		return nil
	}
	return s
}

func (s *session) remoteKey() remoteKey {
	return remoteKey{addr: s.peer, num: s.remote, token: s.peerToken}
}

func (k peerKey) client() clientKey { return clientKey{addr: k.addr, num: k.num} }

// markStale notes that s's deadline may have moved; rescheduleStale takes
// it before anyone reads the timers.
func (e *Engine) markStale(s *session) {
	if s.c == nil || s.stale {
		return
	}
	s.stale = true
	e.stale = append(e.stale, s)
}

// rescheduleStale brings the timer entries of the sessions markStale noted
// up to date.
func (e *Engine) rescheduleStale() {
	for i, s := range e.stale {
		s.stale = false
		if e.sessions[s.num] == s {
			e.schedule(s)
		}
		e.stale[i] = nil
	}
	e.stale = e.stale[:0]
}

// schedule brings s's timer entry up to date: it moves it earlier at once,
// but leaves a later deadline of a busy session for the timer to discover
// when it fires, which keeps the common case (progress pushes the
// deadline out) off the heap. An idle session's later deadline (its
// keepalive) moves at once: its timer would otherwise fire for nothing
// an RTO after each call, and with thousands of sessions each such
// firing reads the session's cold state; the heap's own arrays stay warm.
func (e *Engine) schedule(s *session) {
	if s.c == nil {
		return
	}
	d := e.clientDeadline(s)
	switch {
	case d == Never:
	case !e.timers.in(s):
		s.deadline = d
		e.timers.push(s)
	case d < s.deadline, d > s.deadline && !s.c.busy():
		s.deadline = d
		e.timers.fix(s)
	}
}
