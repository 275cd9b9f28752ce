package proto

import (
	"time"
)

// pktKind says which client packet an in-flight record stands for.
type pktKind uint8

const (
	kindReq pktKind = iota // request data packet idx
	kindRFR                // request for response packet idx
)

// inflight is one credit-holding client packet waiting for its reply. The
// reply echoes seq, so the client knows exactly which transmission it
// answers: RTT samples are exact even for retransmissions, and a reply for a
// packet sent after an unanswered one is evidence of loss.
type inflight struct {
	seq    uint32
	slot   uint16
	kind   pktKind
	retx   uint8  // how many times this packet was sent before this copy
	path   uint8  // the path this copy went on
	bytes  uint16 // its size on the wire (the pacer's and link floor's)
	idx    uint32
	sentAt Time
}

// inflightList holds a session's in-flight records in send order. It never
// holds more than the session's credits (32 by default), so linear scans are
// cheaper than any index. Replies come mostly in send order, so the record
// removed is mostly the oldest: recs is a window on buf that removing the
// oldest moves forward, instead of copying every other record down (with
// 64 calls in flight, 1.5 KB moved per reply); add moves the window back
// to the start of buf when it reaches the end.
type inflightList struct {
	recs []inflight
	buf  []inflight
	// inline is buf until more than its records are in flight at once
	// (useInline): a session with a call or two out keeps its records
	// beside its other state, not in an array of their own, one cache
	// line fewer per packet with thousands of sessions.
	inline [inlineFlight]inflight
}

// inlineFlight is how many records a session keeps inline.
const inlineFlight = 4

// useInline makes the list, empty, start on its inline records.
func (l *inflightList) useInline() {
	l.buf = l.inline[:]
	l.recs = l.buf[:0]
}

func (l *inflightList) len() int { return len(l.recs) }

func (l *inflightList) add(r inflight) {
	if len(l.recs) == cap(l.recs) && len(l.recs) < cap(l.buf) {
		l.recs = l.buf[:copy(l.buf[:cap(l.buf)], l.recs)]
	}
	l.recs = append(l.recs, r)
	if cap(l.recs) > cap(l.buf) { // append grew it: a new array
		l.buf = l.recs
	}
}

// find returns the index of the record with seq, or -1. Records are added
// in send order, which is sequence order, so it is a binary search.
func (l *inflightList) find(seq uint32) int {
	lo, hi := 0, len(l.recs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if seqBefore(l.recs[m].seq, seq) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(l.recs) && l.recs[lo].seq == seq {
		return lo
	}
	return -1
}

// findPacket returns the index of the record for (slot, kind, idx), or -1.
func (l *inflightList) findPacket(slot uint16, kind pktKind, idx uint32) int {
	for i := range l.recs {
		r := &l.recs[i]
		if r.slot == slot && r.kind == kind && r.idx == idx {
			return i
		}
	}
	return -1
}

func (l *inflightList) removeAt(i int) inflight {
	r := l.recs[i]
	switch {
	case len(l.recs) == 1:
		l.recs = l.buf[:0]
	case i == 0:
		l.recs = l.recs[1:]
	default:
		l.recs = append(l.recs[:i], l.recs[i+1:]...)
	}
	return r
}

// removeSlot drops every record of slot and returns how many it dropped.
func (l *inflightList) removeSlot(slot uint16) int {
	kept := l.recs[:0]
	for _, r := range l.recs {
		if r.slot != slot {
			kept = append(kept, r)
		}
	}
	n := len(l.recs) - len(kept)
	l.recs = kept
	return n
}

// removeKind drops every record of slot of the given kind.
func (l *inflightList) removeKind(slot uint16, kind pktKind) int {
	kept := l.recs[:0]
	for _, r := range l.recs {
		if r.slot != slot || r.kind != kind {
			kept = append(kept, r)
		}
	}
	n := len(l.recs) - len(kept)
	l.recs = kept
	return n
}

// seqBefore reports whether a was sent before b, modulo wrap-around.
func seqBefore(a, b uint32) bool { return int32(a-b) < 0 }

// rttEstimator keeps the smoothed RTT and its variance (RFC 6298).
type rttEstimator struct {
	srtt, rttvar, latest time.Duration
	has                  bool
}

func (r *rttEstimator) sample(d time.Duration) {
	if d <= 0 {
		d = 1
	}
	r.latest = d
	if !r.has {
		r.srtt, r.rttvar, r.has = d, d/2, true
		return
	}
	delta := r.srtt - d
	if delta < 0 {
		delta = -delta
	}
	r.rttvar = (3*r.rttvar + delta) / 4
	r.srtt = (7*r.srtt + d) / 8
}

// rto is the retransmission timeout: srtt + 4 rttvar within [MinRTO, MaxRTO].
func (r *rttEstimator) rto(cfg *Config) time.Duration {
	if !r.has {
		return cfg.InitialRTO
	}
	return min(max(r.srtt+4*r.rttvar, cfg.MinRTO), cfg.MaxRTO)
}

// lossDelay is how long after a later packet was answered an earlier one is
// declared lost: 9/8 of the larger of the smoothed and latest RTT (QUIC's
// time threshold), at least 250 µs and never more than the RTO.
func (r *rttEstimator) lossDelay(cfg *Config) time.Duration {
	if !r.has {
		return cfg.InitialRTO
	}
	d := max(r.srtt, r.latest) * 9 / 8
	return min(max(d, time.Millisecond/4), r.rto(cfg))
}

// backoff doubles d per earlier transmission, up to max.
func backoff(d time.Duration, retx uint8, max time.Duration) time.Duration {
	for i := uint8(0); i < retx && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
