package proto

import (
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// host is one engine on the simulated network.
type host struct {
	name string
	addr netip.AddrPort
	e    *Engine
	// onEvent handles the engine's events; nil drops them.
	onEvent func(ev Event)
}

// world drives engines over a simulated network with a fake clock: it jumps
// from one instant where something happens to the next, so a simulated
// minute of retransmissions runs in milliseconds and every run is a pure
// function of its seed.
type world struct {
	t       testing.TB
	now     Time
	net     *simnet.Net
	hosts   []*host
	byAddr  map[netip.Addr]*host // a host owns every port of its address: one per path
	actions []action
	steps   int
	stuck   int                                           // consecutive steps at the same instant
	onRecv  func(now Time, from netip.AddrPort, size int) // if set, sees every datagram delivered
	// If set, srcOf names the source address a host's path-p packets
	// reach the network with, and route the host a datagram to an
	// address reaches (nil: lost): a NAT in front of a host (nat_test.go).
	srcOf func(h *host, p uint8) netip.AddrPort
	route func(to netip.AddrPort) *host
	// dropStrays, if set, drops at the sender the packets addressed to no
	// host (the answers to forged sources), counting them in strays: the
	// simulated network keeps state per link, which a flood of forged
	// sources would fill.
	dropStrays bool
	strays     int
	// onSend, if set, sees every datagram a host sends, after its
	// source address is chosen (the header and payload are only valid
	// during the call).
	onSend func(from, to netip.AddrPort, head, payload []byte)
}

type action struct {
	at Time
	fn func()
}

func newWorld(t testing.TB, seed uint64, link simnet.LinkConfig) *world {
	return &world{t: t, now: 1, net: simnet.New(seed, link), byAddr: make(map[netip.Addr]*host)}
}

func (w *world) addHost(name, addr string, cfg Config) *host {
	h := &host{name: name, addr: netip.MustParseAddrPort(addr), e: New(cfg)}
	w.hosts = append(w.hosts, h)
	w.byAddr[h.addr.Addr()] = h
	return h
}

// pathAddr is the address a host sends path p's packets from: its port
// plus p, as a client spraying over several source ports would.
func pathAddr(a netip.AddrPort, p uint8) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr(), a.Port()+uint16(p))
}

// replace swaps the engine at h's address for a new one: a process restart.
func (w *world) replace(h *host, cfg Config) { h.e = New(cfg) }

// at schedules fn at time t (or now, if t has passed).
func (w *world) at(t Time, fn func()) { w.actions = append(w.actions, action{t, fn}) }

// next is the earliest instant anything happens.
func (w *world) next() Time {
	t := Time(w.net.Next())
	for _, h := range w.hosts {
		t = minTime(t, h.e.NextDeadline())
	}
	for _, a := range w.actions {
		t = minTime(t, a.at)
	}
	return t
}

// step advances to the next instant and processes it. It reports false
// when nothing is left to happen before limit.
func (w *world) step(limit Time) bool {
	t := w.next()
	if t > limit {
		return false
	}
	if t <= w.now {
		// Engines must not ask to be woken for nothing: a real driver
		// would spin on the CPU.
		if w.stuck++; w.stuck > 100000 {
			w.t.Fatalf("simulated time stuck at %v: something is due every step but nothing moves", time.Duration(w.now))
		}
	} else {
		w.stuck = 0
	}
	w.now = maxTime(w.now, t)
	w.steps++
	for {
		d, ok := w.net.Pop(int64(w.now))
		if !ok {
			break
		}
		if w.onRecv != nil {
			w.onRecv(w.now, d.From, len(d.Data))
		}
		if h := w.hostAt(d.To); h != nil {
			h.e.Receive(w.now, d.From, d.Data)
		}
		w.net.Release(d)
	}
	w.runActions()
	for _, h := range w.hosts {
		h.e.Tick(w.now)
	}
	w.flush()
	return true
}

func (w *world) runActions() {
	for i := 0; i < len(w.actions); {
		if a := w.actions[i]; a.at <= w.now {
			w.actions = append(w.actions[:i], w.actions[i+1:]...)
			a.fn()
			continue
		}
		i++
	}
}

// flush drains every host's events and sends its packets.
func (w *world) flush() {
	for _, h := range w.hosts {
		for {
			ev, ok := h.e.NextEvent()
			if !ok {
				break
			}
			if h.onEvent != nil {
				h.onEvent(ev)
			}
		}
		for _, p := range h.e.Outgoing(w.now) {
			if w.dropStrays && w.byAddr[p.To.Addr()] == nil {
				w.strays++
				continue
			}
			src := w.source(h, p.Path)
			if w.onSend != nil {
				w.onSend(src, p.To, p.Head(), p.Payload)
			}
			w.net.Send(int64(w.now), src, p.To, p.Head(), p.Payload)
		}
	}
}

// hostAt is the host a datagram to addr reaches, or nil.
func (w *world) hostAt(to netip.AddrPort) *host {
	if w.route != nil {
		return w.route(to)
	}
	return w.byAddr[to.Addr()]
}

// source is the address h's path-p packets come from.
func (w *world) source(h *host, p uint8) netip.AddrPort {
	if w.srcOf != nil {
		return w.srcOf(h, p)
	}
	return pathAddr(h.addr, p)
}

// runUntil steps until done returns true, failing the test if the
// simulated time passes limit first.
func (w *world) runUntil(limit Time, done func() bool) {
	w.t.Helper()
	w.flush()
	for !done() {
		if !w.step(limit) {
			w.t.Fatalf("simulated time %v: nothing left to happen before the limit %v and the run is not done", w.now, limit)
		}
	}
}

// runFor steps through everything that happens in the next d nanoseconds.
func (w *world) runFor(d Time) {
	w.flush()
	end := w.now + d
	for w.step(end) {
	}
	w.now = maxTime(w.now, end)
}

// addr parses an address literal.
func addr(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
