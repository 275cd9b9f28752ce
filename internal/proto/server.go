package proto

import (
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// serverSide is the state only server sessions have: one slot per request
// number class, and nothing per packet. A server keeps no timers and sends
// only replies (eRPC's client-driven protocol); an idle session costs one
// small struct per slot, and an unconfirmed one none (see establish).
type serverSide struct {
	key       peerKey
	credits   int  // negotiated, repeated in duplicate connect-acks
	confirmed bool // a packet with our token arrived: the client has the ack
	// The list of unconfirmed sessions s is in, if any: Engine.halfOpen
	// (made without a cookie) or Engine.provenOpen (with one).
	unconfirmedIn      *halfOpenList
	halfPrev, halfNext *session
	halfDue            Time   // when it is reaped if still unconfirmed
	unseen             uint64 // every request numbered this or higher is one we never saw
	slots              []serverSlot
	metered            bool         // a congestion-controlled client: see shareMeter
	share              sessionShare // its request bytes, for the share mark
	under              bool         // under its share at its latest request packet
	probe              *pathProbe   // the challenges out to the client's new address, if any
	// from is the address the client's latest packet came from. A port
	// change alone moves no table entry (a multipath client sends from
	// several ports at once), so key.addr may be a port the client has
	// left and a NAT has since given to another client: confirm ends an
	// older session only if its client was last heard there.
	from netip.AddrPort
	// opened is when the latest copy of the connect that made the session
	// arrived before it was confirmed.
	opened Time
}

type sslotState uint8

const (
	sslotIdle      sslotState = iota // no request seen yet
	sslotReceiving                   // reassembling reqNum
	sslotHandling                    // reqNum delivered; waiting for Respond
	sslotResponded                   // resp kept until the client moves on
	sslotNacked                      // reqNum refused; NACK repeated to duplicates
	sslotCanceled                    // the client canceled reqNum
)

// serverSlot holds the current request of one number class. It keeps the
// last response until a request with a higher number arrives, which the
// client only sends once it has that response: a duplicate request gets the
// stored response again and the handler never runs twice (at-most-once).
type serverSlot struct {
	state  sslotState
	code   uint8      // response status, or NACK reason
	flags  wire.Flags // the response's own flags (wire.FlagMetadata), on each of its packets
	reqNum uint64
	req    *Request // receiving or handling
	resp   []byte   // responded
	// respMem is the memory resp lives in, which the slot owns until the
	// client moves on (see keepResponse); respRound the round in which a
	// packet pointing into it was last queued.
	respMem   []byte
	respRound uint64
}

type reqState uint8

const (
	reqFree reqState = iota
	reqReceiving
	reqHandling
	reqOrphaned // canceled or session gone while handling; awaits Respond
)

// Request is a server-side request from first packet to response. Requests
// come from one pool shared by all sessions, so receive memory follows the
// load, not the number of clients (NEBULA).
type Request struct {
	gen     uint32 // bumped on release, invalidating old handles
	state   reqState
	slot    uint16
	sess    *session
	reqNum  uint64
	reqType uint32
	data    []byte
	pkts    uint32
	gotN    uint32
	got     bitmap

	// The packet that completed the request, whose reply is owed until the
	// response is ready or the round ends (see Engine.Outgoing).
	owed     bool
	owedSeq  uint32
	owedIdx  uint32
	owedPath uint8
	owedTo   netip.AddrPort // the client port the completing packet came from
	arrived  Time
	deadline Time // the client's deadline, on our clock; Never if none
	meta     bool // the message starts with a metadata block (wire.FlagMetadata)
	outIdx   int  // reserved place of the owed reply in the output queue
	tag      any  // the driver's own record of this request
	parked   bool // it waits for an event, not for work (Park)
}

// ReqHandle refers to a delivered request. It is a value with a generation,
// so a handle used after its request was answered is detected, not confused
// with a newer request that reuses the same memory.
type ReqHandle struct {
	r   *Request
	gen uint32
}

func (r *Request) handle() ReqHandle { return ReqHandle{r: r, gen: r.gen} }

func (h ReqHandle) live() *Request {
	if h.r == nil || h.r.gen != h.gen || h.r.state == reqFree {
		return nil
	}
	return h.r
}

// Data is the request message, in memory the engine owns. It stays valid
// until Respond or Reject; a response that points into it takes it over.
func (h ReqHandle) Data() []byte {
	if r := h.live(); r != nil {
		return r.data
	}
	return nil
}

// Type is the request type the client named.
func (h ReqHandle) Type() uint32 {
	if r := h.live(); r != nil {
		return r.reqType
	}
	return 0
}

// Session is the server session the request arrived on.
func (h ReqHandle) Session() SessionID {
	if r := h.live(); r != nil && r.sess != nil {
		return r.sess.id()
	}
	return 0
}

// Peer is the address of the client that sent the request.
func (h ReqHandle) Peer() netip.AddrPort {
	if r := h.live(); r != nil && r.sess != nil {
		return r.sess.peer
	}
	return netip.AddrPort{}
}

// HasMetadata reports whether the request's Data starts with a metadata
// block (wire.ParseMetadata).
func (h ReqHandle) HasMetadata() bool {
	r := h.live()
	return r != nil && r.meta
}

// Deadline is the client's deadline for the request, on the engine's
// clock, and whether it sent one.
func (h ReqHandle) Deadline() (Time, bool) {
	if r := h.live(); r != nil && r.deadline != Never {
		return r.deadline, true
	}
	return 0, false
}

// Valid reports whether the handle still names an unanswered request.
func (h ReqHandle) Valid() bool { return h.live() != nil }

// SetTag attaches the driver's own record to the request, for
// EventRequestCanceled to find. It is dropped when the request is released.
func (h ReqHandle) SetTag(v any) {
	if r := h.live(); r != nil {
		r.tag = v
	}
}

// Tag returns what SetTag attached.
func (h ReqHandle) Tag() any {
	if r := h.live(); r != nil {
		return r.tag
	}
	return nil
}

// Respond answers request h with status and resp (at most the session's
// MaxMsgSize). resp is either part of h's Data, whose buffer the slot then
// takes over (an echo costs no copy), or memory the caller hands over for
// good, such as a buffer from Buffer: the engine keeps it until the client
// has the response, then recycles it. The request's Data is released.
// Responding to a request that was canceled meanwhile releases it and
// returns ErrRequestGone; on any error the caller keeps resp.
func (e *Engine) Respond(now Time, h ReqHandle, status uint8, resp []byte) error {
	return e.RespondFlags(now, h, status, resp, 0)
}

// RespondFlags is Respond with response flags the driver sets on every
// packet of the response: wire.FlagMetadata when resp starts with the
// response's metadata blocks. Other flags are the engine's and are
// ignored.
func (e *Engine) RespondFlags(now Time, h ReqHandle, status uint8, resp []byte, flags wire.Flags) error {
	r, err := e.answerable(h)
	if err != nil {
		return err
	}
	s := r.sess
	if len(resp) > s.maxMsg {
		return &SizeError{Size: len(resp), Max: s.maxMsg} // errors.Is ErrMsgTooLarge
	}
	sl := &s.s.slots[r.slot]
	sl.state = sslotResponded
	sl.code = status
	sl.flags = flags & wire.FlagMetadata
	sl.req = nil
	e.keepResponse(sl, r, resp)
	e.fillResp(e.owedPacket(r), r.owedTo, s, sl, 0, r.owedSeq, r.owedPath, holdMicros(now, r.arrived))
	e.releaseRequest(r)
	return nil
}

// Reject refuses request h without running it: the client's call fails with
// ErrOverloaded. The application uses it when its own queue is full.
func (e *Engine) Reject(now Time, h ReqHandle) error {
	r, err := e.answerable(h)
	if err != nil {
		return err
	}
	s := r.sess
	sl := &s.s.slots[r.slot]
	sl.state = sslotNacked
	sl.code = wire.CodeQueueFull
	sl.req = nil
	hdr := s.header(wire.TypeNack, sl.reqNum)
	hdr.Code = sl.code
	hdr.TxSeq, hdr.Path, hdr.HoldMicros = r.owedSeq, r.owedPath, holdMicros(now, r.arrived)
	p := e.owedPacket(r)
	e.fill(p, r.owedTo, &hdr, nil)
	p.Tag = s.tag
	e.stats.NacksSent++
	e.nacks.add(now)
	e.releaseRequest(r)
	return nil
}

// answerable checks that h names a request waiting for its answer. An
// orphaned one is released on the spot.
func (e *Engine) answerable(h ReqHandle) (*Request, error) {
	r := h.live()
	switch {
	case r == nil:
		return nil, ErrStaleRequest
	case r.state == reqOrphaned:
		e.releaseRequest(r)
		return nil, ErrRequestGone
	case r.state != reqHandling:
		return nil, ErrStaleRequest
	}
	return r, nil
}

// sendResp sends response packet idx of slot sl, echoing seq, to the
// port the packet it answers came from.
func (e *Engine) sendResp(s *session, sl *serverSlot, idx, seq uint32, path uint8, hold uint16) {
	e.fillResp(e.newPacket(), e.from, s, sl, idx, seq, path, hold)
}

func (e *Engine) fillResp(p *Packet, to netip.AddrPort, s *session, sl *serverSlot, idx, seq uint32, path uint8, hold uint16) {
	sl.respRound = e.round
	h := s.header(wire.TypeResp, sl.reqNum)
	h.Code = sl.code
	h.MsgSize = uint32(len(sl.resp))
	h.PktIndex = idx
	h.TxSeq, h.Path, h.HoldMicros = seq, path, hold
	h.Flags = shareFlag(s) | sl.flags
	lo, hi := dataRange(idx, len(sl.resp), s.dpp)
	e.fill(p, to, &h, sl.resp[lo:hi])
	p.Tag = s.tag
}

// replyPending answers a delivered request's completing packet with a
// pending credit return, because its handler did not respond this round.
func (e *Engine) replyPending(now Time, r *Request) {
	s := r.sess
	h := s.header(wire.TypeCR, r.reqNum)
	h.Flags = wire.FlagPending | shareFlag(s)
	h.PktIndex = r.owedIdx
	h.TxSeq, h.Path, h.HoldMicros = r.owedSeq, r.owedPath, holdMicros(now, r.arrived)
	p := e.owedPacket(r)
	e.fill(p, r.owedTo, &h, nil)
	p.Tag = s.tag
}

// holdMicros is the time a reply was held at the server, for the client's
// RTT sample.
func holdMicros(now, since Time) uint16 {
	d := now.Sub(since) / time.Microsecond
	if d < 0 {
		return 0
	}
	if d >= wire.HoldSaturated {
		return wire.HoldSaturated
	}
	return uint16(d)
}

// retireSlot ends whatever the slot holds so it can take a new number.
func (e *Engine) retireSlot(sl *serverSlot) {
	switch sl.state {
	case sslotReceiving:
		e.releaseRequest(sl.req)
	case sslotHandling:
		r := sl.req
		r.state = reqOrphaned
		e.forgive(r)
		e.emitEvent(Event{Type: EventRequestCanceled, Session: r.sess.id(), Req: r.handle()})
	}
	sl.req = nil
	e.dropResponse(sl)
}

// sendClosing tells the client of server session s that the server ends it
// (the endpoint closes, or the session was idle too long): a reset with
// CodeServerClosing, the only packet a server sends unasked. It says the
// lowest request number the server never saw: a request numbered that or
// higher never ran, and never will, so the client may send it again on a
// new session. An idle client then opens a new session for its next call
// instead of sending it on one that the server's next incarnation will not
// know. It carries the client's token (MsgSize), which the client
// checks: the server's token, which names the session, travels in every
// client packet, so without it anyone who saw one could end the session
// and make the client run its calls again. It goes where the client last
// spoke from. It is best effort: if it is lost, the client learns from
// the next incarnation's reset.
func (e *Engine) sendClosing(s *session) {
	h := wire.Header{Type: wire.TypeReset, Code: wire.CodeServerClosing, Session: s.num, Token: s.token,
		ReqNum: s.s.unseen, MsgSize: s.peerToken}
	to := s.s.from
	if !to.IsValid() { // never heard from since its connect
		to = s.peer
	}
	e.emitFor(s, to, &h, nil)
	e.stats.ResetsSent++
}

// Drain marks the engine as shutting down: from now on every packet it
// sends as a server carries wire.FlagDraining, and each server session's
// client is told at once, with a pong carrying CodeDraining (best effort:
// a lost one is made good by the next answer's flag). The driver refuses
// new requests itself (as never run); Drain changes nothing else.
func (e *Engine) Drain(now Time) {
	if e.draining {
		return
	}
	e.draining = true
	for _, s := range e.sessions {
		if s == nil || s.s == nil {
			continue
		}
		h := s.header(wire.TypePong, 0)
		h.Code = wire.CodeDraining
		to := s.s.from
		if !to.IsValid() {
			to = s.peer
		}
		e.emit(to, &h, nil)
	}
}

// onDraining notes that client session s's server is shutting down.
func (e *Engine) onDraining(s *session) {
	if !s.c.draining {
		s.c.draining = true
		e.emitEvent(Event{Type: EventDraining, Session: s.id(), Peer: s.peer})
	}
}

// endServerSession orphans the session's running requests and forgets it.
func (e *Engine) endServerSession(now Time, s *session) {
	for i := range s.s.slots {
		e.retireSlot(&s.s.slots[i])
	}
	e.serverSessions--
}

// sweepIdle ends server sessions not heard from within IdleTimeout: their
// client is gone, and a server sends nothing unasked to find out.
func (e *Engine) sweepIdle(now Time) {
	for _, s := range e.sessions {
		if s != nil && s.s != nil && now.Sub(s.lastHeard) > e.cfg.IdleTimeout {
			e.sendClosing(s)
			e.endSession(now, s, ErrServerIdle)
		}
	}
	e.nextSweep = Never
	if e.serverSessions > 0 {
		e.nextSweep = now.Add(e.cfg.IdleTimeout / 4)
	}
}
