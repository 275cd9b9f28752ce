package proto

import (
	"net/netip"

	"github.com/erpc-go/erpc/internal/wire"
)

// The share mark (wire.FlagUnderShare) tells a client session that it gets
// less than its share of the request data arriving at this server, so that
// its congestion control may grow while the others cut (see package cc,
// "The share mark"). A server is where the senders of an incast meet: it
// sees every session's rate at once, which no sender does.

// shareEpochShift sets the meter's epochs, 2^21 ns (2.1 ms): a session's
// rate is its bytes of the current and the previous epoch, the last
// 2.1-4.2 ms. At 50 senders through 500 Mbit/s that is five to ten packets
// each; much shorter and the shares are noise, much longer and the mark
// lags the windows. (An exponential decay with a 2-4 ms time constant did
// as well in the simulated incast, but its two exponentials per request
// packet cost the engine's round trip 65 ns, a fifth of it.)
const shareEpochShift = 21

// shareMargin: a session is under its share when its rate is below this
// fraction of the mean. A lone session is never marked (its rate is the
// mean), nor are sessions close to it. Closer to 1 is fairer and fills the
// queue more: at 0.98 the simulated 50-way incast at 10 Gbit/s
// (TestSimIncast, 50-later) overflowed its queue, at 0.9 it did not; 0.8
// was visibly less fair.
const shareMargin = 0.9

// shareMeter measures each metered server session's request bytes over
// the current and the previous epoch, and over all sessions the sum and
// the sum of squares of those counts, so that sq/sum, the mean rate
// weighted by rate (where an idle or light session counts for little), is
// known in O(1) per packet. The sum of squares over the two epochs needs
// the squares of each epoch and the cross term, sum of prev*cur.
type shareMeter struct {
	epoch       int64
	prev, cur   float64 // sums of the sessions' counts
	prev2, cur2 float64 // sums of their squares
	cross       float64 // sum of prev*cur
}

// sessionShare is one session's counts, as of epoch.
type sessionShare struct {
	epoch     int64
	prev, cur float64
}

// add counts bytes arriving for x at now, and reports whether x is then
// under its share. Time only moves forward.
func (m *shareMeter) add(now Time, x *sessionShare, bytes int) (under bool) {
	ep := int64(now) >> shareEpochShift
	if ep != m.epoch {
		m.prev, m.prev2 = 0, 0
		if ep == m.epoch+1 {
			m.prev, m.prev2 = m.cur, m.cur2
		}
		m.cur, m.cur2, m.cross, m.epoch = 0, 0, 0, ep
	}
	if x.epoch != ep {
		x.prev = 0
		if x.epoch == ep-1 {
			x.prev = x.cur
		}
		x.cur, x.epoch = 0, ep
	}
	b := float64(bytes)
	m.cur += b
	m.cur2 += (2*x.cur + b) * b
	m.cross += x.prev * b
	x.cur += b
	sum := m.prev + m.cur
	sq := m.prev2 + 2*m.cross + m.cur2
	return (x.prev+x.cur)*sum < shareMargin*sq
}

// metered reports whether sessions from peer take part in the share
// meter: those whose client runs congestion control, as far as this engine
// can tell. Peers it calls uncongested or reliable (same host) are left
// out, and their packets cost the meter nothing.
func (e *Engine) metered(peer netip.AddrPort) bool {
	return !(e.cfg.Uncongested != nil && e.cfg.Uncongested(peer)) && !(e.cfg.Reliable != nil && e.cfg.Reliable(peer))
}

// shareFlag is the mark for replies to server session s.
func shareFlag(s *session) wire.Flags {
	if s.s.under {
		return wire.FlagUnderShare
	}
	return 0
}
