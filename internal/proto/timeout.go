package proto

import (
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// sameHostRTO is the least timeout of a session to a peer on the same
// host (Config.Uncongested). Nothing between the two processes loses a
// datagram (credits keep the socket buffers from filling), so what the
// timer meets there is a host that did not run the peer: a descheduled
// thread, a virtual CPU the hypervisor took away. eRPC's 5 ms is below
// what a VM does: a thread spinning alone on a pinned vCPU of our 2-vCPU
// test VM saw gaps of up to 4.3 ms in 60 s (3 ms under SCHED_FIFO, so
// not other tasks), and loaded, a server stall of 5.7 ms expired a
// loopback call in about one erpc-bench rate run in ten. 20 ms is four
// times the worst seen, and a tenth of what TCP waits at least on the
// same loopback (Linux's 200 ms RTO floor).
const sameHostRTO = 20 * time.Millisecond

// leanRTO is the least timeout of a session on the lean path
// (Config.Reliable): nothing is lost there unless the peer's side breaks
// the transport's promise, so the timer only has to end a wait that
// would otherwise last until the failure timeout.
const leanRTO = 100 * time.Millisecond

// rto is the session's retransmission timeout: the RTT estimator's, no
// less than the floor spurious timeouts raised.
func (cs *clientSide) rto(cfg *Config) time.Duration {
	return min(max(cs.rtt.rto(cfg), cs.rtoFloor), cfg.MaxRTO)
}

// expiry is when in-flight record r is given up on: rto after it was sent
// or after the last reply or expiry, whichever is later, doubled per
// earlier copy of r and per expiry in a row.
func (cs *clientSide) expiry(r *inflight, rto time.Duration, cfg *Config) Time {
	return maxTime(r.sentAt, cs.lastAck).Add(backoff(rto, max(r.retx, cs.timeouts), cfg.MaxRTO))
}

// expire notes that the timer gave up on r, which is about to be sent
// again: the other packets' timers restart from now. The first expiry of
// a stretch without replies remembers the copy it gave up on: the one a
// stalled peer answers first.
func (cs *clientSide) expire(now Time, r *inflight) {
	if cs.timeouts == 0 {
		cs.rtoSeq, cs.rtoSent = r.seq, r.sentAt
	}
	cs.timeouts = min(cs.timeouts+1, 30)
	cs.lastAck = now
}

// floorHalfLife is how often a raised timeout floor gives back half of
// what it rose by, while replies keep coming: a host that stalled once
// does not slow the session's loss recovery for the rest of its life.
const floorHalfLife = 10 * time.Second

// relaxFloor, on a reply, halves what the floor rose by over its base
// each floorHalfLife since it last rose or relaxed.
func (cs *clientSide) relaxFloor(now Time) {
	if cs.rtoFloor <= cs.floorBase || now.Sub(cs.floorAt) < floorHalfLife {
		return
	}
	cs.rtoFloor = cs.floorBase + (cs.rtoFloor-cs.floorBase)/2
	cs.floorAt = now
}

// noteLateReply looks at a reply that answers no packet in flight. Any
// reply ends a stretch of expiries. One to the copy the stretch's first
// expiry gave up on proves that copy was late, not lost, and the
// timeout's floor rises to twice the delay it took.
func (e *Engine) noteLateReply(now Time, cs *clientSide, h *wire.Header) {
	cs.timeouts = 0
	if cs.rtoSeq == 0 || h.TxSeq != cs.rtoSeq {
		return
	}
	cs.rtoSeq = 0
	e.stats.SpuriousTimeouts++
	cs.rtoFloor = min(max(cs.rtoFloor, 2*now.Sub(cs.rtoSent)), e.cfg.MaxRTO)
	cs.floorAt = now
}
