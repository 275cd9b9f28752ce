package proto

import (
	"net/netip"

	"github.com/erpc-go/erpc/internal/wire"
)

// Queuing what the engine sends: events for the driver and packets for
// the wire. A packet carries its session's driver tag (ReceiveTagged), and
// a draining server flags every packet it sends (Drain).

func (e *Engine) emitEvent(ev Event) { e.events = append(e.events, ev) }

// newEvent queues an event of type t and returns it for the caller to
// fill in place: the per-call events (a request, a response) set three or
// four of an Event's fields, and building a whole Event to copy it into
// the queue cost more than the rest of their delivery. The queue's unused
// capacity is zero (NextEvent clears each event it pops).
func (e *Engine) newEvent(t EventType) *Event {
	if n := len(e.events); n < cap(e.events) {
		e.events = e.events[:n+1]
	} else {
		e.events = append(e.events, Event{})
	}
	ev := &e.events[len(e.events)-1]
	ev.Type = t
	return ev
}

func (e *Engine) newPacket() *Packet {
	e.out = append(e.out, Packet{})
	return &e.out[len(e.out)-1]
}

// emit queues a datagram with header h and a payload that is referenced, not
// copied.
func (e *Engine) emit(to netip.AddrPort, h *wire.Header, payload []byte) {
	e.fill(e.newPacket(), to, h, payload)
}

// emitFor queues a datagram of session s: it carries s's tag.
func (e *Engine) emitFor(s *session, to netip.AddrPort, h *wire.Header, payload []byte) {
	p := e.newPacket()
	e.fill(p, to, h, payload)
	p.Tag = s.tag
}

func (e *Engine) fill(p *Packet, to netip.AddrPort, h *wire.Header, payload []byte) {
	p.To, p.Payload, p.headLen, p.Path, p.Tag = to, payload, wire.HeaderLen, 0, e.rxTag
	if e.draining && !h.Type.FromClient() {
		h.Flags |= wire.FlagDraining
	}
	h.Put(p.head[:])
	e.stats.PacketsOut++
}

// emitOnPath queues a packet of client session s to go out on path
// h.Path.
func (e *Engine) emitOnPath(s *session, h *wire.Header, payload []byte) {
	p := e.newPacket()
	e.fill(p, s.peer, h, payload)
	p.Path, p.Tag = h.Path, s.tag
}

// emitConnect queues a connect or connect-ack with its payload inline, and
// cookie, if any, as the packet's Payload: it must stay put until sent.
// tag is the packet's Packet.Tag.
func (e *Engine) emitConnect(to netip.AddrPort, h *wire.Header, c *wire.Connect, cookie []byte, tag uint64) {
	p := e.newPacket()
	p.To, p.headLen, p.Payload, p.Tag = to, wire.HeaderLen+wire.ConnectLen, cookie, tag
	if e.draining && !h.Type.FromClient() {
		h.Flags |= wire.FlagDraining
	}
	h.Put(p.head[:])
	c.Put(p.head[wire.HeaderLen:])
	e.stats.PacketsOut++
}

// HasEvents reports whether NextEvent has an event to pop.
func (e *Engine) HasEvents() bool { return e.evHead < len(e.events) }

// NextEvent pops the oldest pending event.
func (e *Engine) NextEvent() (Event, bool) {
	if e.evHead == len(e.events) {
		e.resetEvents()
		return Event{}, false
	}
	ev := e.events[e.evHead]
	e.events[e.evHead] = Event{} // drop references
	e.evHead++
	if e.evHead == len(e.events) {
		e.resetEvents()
	}
	return ev, true
}

// TakeEvent pops the oldest pending event and returns it in place, or nil
// if there is none: no 150-byte copy out and clear, as NextEvent makes.
// It stays valid until the next TakeEvent or NextEvent call; the driver
// may call the engine meanwhile (start calls, respond), and the events
// that adds go after it. The queue's memory is reused once a call finds
// it empty, so a driver takes events until nil, as the driver loop does.
func (e *Engine) TakeEvent() *Event {
	if e.evHead == len(e.events) {
		e.resetEvents()
		return nil
	}
	e.evHead++
	return &e.events[e.evHead-1]
}

// resetEvents empties the consumed queue, dropping its references.
func (e *Engine) resetEvents() {
	if e.evHead > 0 {
		clear(e.events[:e.evHead])
		e.events = e.events[:0]
		e.evHead = 0
	}
}
