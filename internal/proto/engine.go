package proto

import (
	"net/netip"
	"slices"

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
//	for ev, ok := e.NextEvent(); ok; ev, ok = e.NextEvent() { handle ev }
//	send e.Outgoing(now)
//	sleep until e.NextDeadline() or a datagram arrives
//
// Handlers and continuations may call StartCall, Respond, Reject and Cancel
// while events are being drained.
type Engine struct {
	cfg Config

	sessions []*session // indexed by local session number; nil when free
	freeNums []uint32   // released numbers, reused oldest first
	freeHead int
	byToken  map[uint32]*session // client sessions, to route resets
	byPeer   map[peerKey]*session

	timers    timerHeap
	due       []*session // scratch for Tick
	nextSweep Time

	out, outSpare []Packet
	events        []Event
	evHead        int
	owed          []*Request // delivered this round, reply still owed
	holes         int        // reserved reply places given up this round

	reqPool        []*Request
	bufs           bufPool
	heldReqs       int
	heldBytes      int
	serverSessions int
	nextCallID     CallID

	hdr   wire.Header // scratch for parsing
	stats Stats
}

// peerKey identifies a client session from the server's side: the client's
// address and its own session number.
type peerKey struct {
	addr netip.AddrPort
	num  uint32
}

// New returns an engine with cfg's limits (zero fields take defaults).
func New(cfg Config) *Engine {
	cfg = cfg.withDefaults()
	e := &Engine{
		cfg:       cfg,
		byToken:   make(map[uint32]*session),
		byPeer:    make(map[peerKey]*session),
		nextSweep: Never,
	}
	e.bufs.limit = cfg.PoolBytes
	e.nextCallID = 1
	return e
}

// Config returns the engine's configuration with defaults resolved.
func (e *Engine) Config() Config { return e.cfg }

// Receive processes one datagram from addr. pkt is not retained: the engine
// copies what it keeps. Malformed or unexpected datagrams are dropped and
// counted in Stats, never answered with a panic.
func (e *Engine) Receive(now Time, from netip.AddrPort, pkt []byte) {
	e.stats.PacketsIn++
	h := &e.hdr
	payload, err := h.Parse(pkt)
	if err != nil {
		e.stats.DropMalformed++
		return
	}
	if h.Type.FromClient() {
		e.serverReceive(now, from, h, payload)
	} else {
		e.clientReceive(now, from, h, payload)
	}
}

// Tick runs the timers that are due: retransmissions, probes, connect
// retries, keepalives, failure detection and the server's idle sweep.
func (e *Engine) Tick(now Time) {
	due := e.due[:0]
	for e.timers.len() > 0 && e.timers.top().deadline <= now {
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
}

// NextDeadline is when Tick next has work, or Never.
func (e *Engine) NextDeadline() Time {
	d := e.nextSweep
	if e.timers.len() > 0 {
		d = minTime(d, e.timers.top().deadline)
	}
	return d
}

// NextEvent pops the oldest pending event.
func (e *Engine) NextEvent() (Event, bool) {
	if e.evHead == len(e.events) {
		return Event{}, false
	}
	ev := e.events[e.evHead]
	e.events[e.evHead] = Event{} // drop references
	e.evHead++
	if e.evHead == len(e.events) {
		e.events = e.events[:0]
		e.evHead = 0
	}
	return ev, true
}

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
	out := e.out
	e.out, e.outSpare = e.outSpare[:0], out
	return out
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

func (e *Engine) emitEvent(ev Event) { e.events = append(e.events, ev) }

func (e *Engine) newPacket() *Packet {
	e.out = append(e.out, Packet{})
	return &e.out[len(e.out)-1]
}

// emit queues a datagram with header h and a payload that is referenced, not
// copied.
func (e *Engine) emit(to netip.AddrPort, h *wire.Header, payload []byte) {
	e.fill(e.newPacket(), to, h, payload)
}

func (e *Engine) fill(p *Packet, to netip.AddrPort, h *wire.Header, payload []byte) {
	p.To, p.Payload, p.headLen = to, payload, wire.HeaderLen
	h.Put(p.head[:])
	e.stats.PacketsOut++
}

// emitConnect queues a connect or connect-ack with its payload inline.
func (e *Engine) emitConnect(to netip.AddrPort, h *wire.Header, c *wire.Connect) {
	p := e.newPacket()
	p.To, p.headLen = to, wire.HeaderLen+wire.ConnectLen
	h.Put(p.head[:])
	c.Put(p.head[wire.HeaderLen:])
	e.stats.PacketsOut++
}

// newSession allocates a session number and installs s under it.
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
	}
	s.heapIdx = -1
	s.deadline = Never
	e.sessions[s.num] = s
}

// freeSession removes s from every table. Its calls and requests must have
// been settled already.
func (e *Engine) freeSession(s *session) {
	if e.sessions[s.num] != s {
		return
	}
	e.sessions[s.num] = nil
	e.freeNums = append(e.freeNums, s.num)
	e.timers.remove(s)
	if s.c != nil && e.byToken[s.token] == s {
		delete(e.byToken, s.token)
	}
	if s.s != nil && e.byPeer[s.s.key] == s {
		delete(e.byPeer, s.s.key)
	}
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

// schedule brings s's timer entry up to date: it moves it earlier at once,
// but leaves a later deadline for the timer to discover when it fires, which
// keeps the common case (progress pushes the deadline out) off the heap.
func (e *Engine) schedule(s *session) {
	if s.c == nil {
		return
	}
	d := e.clientDeadline(s)
	switch {
	case d == Never:
	case s.heapIdx < 0:
		s.deadline = d
		e.timers.push(s)
	case d < s.deadline:
		s.deadline = d
		e.timers.fix(s)
	}
}
