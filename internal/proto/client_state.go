package proto

import (
	"time"

	"github.com/erpc-go/erpc/internal/cc"
	"github.com/erpc-go/erpc/internal/wire"
)

// call is one client RPC as the caller handed it over. The engine holds req
// (to send and resend it) and resp (to fill it) until the call completes.
type call struct {
	id       CallID
	reqType  uint32
	req      []byte
	resp     []byte
	deadline Time       // Never: none
	flags    wire.Flags // request flags from the driver (FlagMetadata)
	tag      any
}

type cslotState uint8

const (
	cslotFree      cslotState = iota
	cslotActive               // sending the request or receiving the response
	cslotCanceling            // call canceled; waiting for the server to drop it
)

// clientSlot is one of a session's Window concurrent requests. Slot i carries
// request numbers i, i+W, i+2W, ...: the server keeps one slot per number
// class, which is what makes at-most-once cheap (eRPC).
type clientSlot struct {
	state  cslotState
	sent   bool // a packet of reqNum left: the server may know the number
	status uint8
	probes uint8 // probes sent without progress, for backoff

	reqNum  uint64
	call    call
	nflight int // in-flight records of this slot

	reqPkts   uint32 // packets in the request
	reqNext   uint32 // first request packet never sent
	reqAcked  bitmap
	reqAckedN uint32

	respSize int  // -1 until the first response packet arrives
	respMeta bool // the response starts with metadata blocks (wire.FlagMetadata)
	respPkts uint32
	respGot  bitmap
	respGotN uint32
	rfrNext  uint32 // first response packet never asked for

	lastProgress Time   // last reply for this slot (probe timer base)
	cancelAt     Time   // last cancel sent
	cancelSeq    uint32 // and its sequence number, which a reset may echo
	retx         int    // packets of the call sent again
	firstSent    Time   // when a packet of reqNum first left
	txRound      uint64 // Engine.round of the last request packet queued
	order        uint64 // when the slot last gained packets to send (FIFO)
	unexecuted   bool   // a reset proved reqNum never reached a live session
}

// waiting reports whether the slot has its whole request acknowledged and
// nothing in flight: it waits for the server's response (a slow handler),
// probing now and then.
func (sl *clientSlot) waiting() bool {
	return sl.state == cslotActive && sl.respSize < 0 && sl.reqAckedN == sl.reqPkts && sl.nflight == 0
}

// clientSide is the state only client sessions have.
type clientSide struct {
	draining bool // the server said it is shutting down (EventDraining sent)
	slots    []clientSlot
	live     bitmap // the slots not free (see nextLive)
	backlog  callQueue
	pending  int // calls accepted and not completed
	cancelsN int // slots canceling

	credits  int // negotiated total
	avail    int // not held by in-flight packets
	paths    int // the paths (client source ports) the session sprays over
	nextPath int // round robin's next, without congestion control
	// Congestion control (cc, last below): the window, the pacer and the
	// path choice. pacedUntil is when the pacer lets the next new packet
	// go, if it has held one back (Never otherwise): the session's timer
	// comes back then.
	noCC       bool // credits alone: NoCongestionControl, or an Uncongested peer
	lean       bool // a Reliable peer: no loss detection, no RTT samples, a safety-net timer only (implies noCC)
	pacedUntil Time
	flight     inflightList
	rtt        rttEstimator
	txSeq      uint32
	// Per path, the largest sequence number answered: a packet is taken
	// for lost when later packets on its own path were answered (packets
	// on a faster path overtake it without saying anything of it).
	largest  []seqMark
	largest1 [1]seqMark // largest's memory on one path, the common case
	// lastAck is when a reply last answered an in-flight packet (0: never).
	// Retransmission timers run from it as well as from each packet's
	// send time, as TCP restarts its timer on every ACK: packets queued
	// behind others at a busy receiver (2 MiB of 64 KiB datagrams takes
	// about a millisecond to copy) are late, not lost, while replies flow.
	lastAck Time
	// The retransmission timeout's discipline (TCP's): an expiry resends
	// the oldest packet only and restarts the timer of the others, which
	// wait twice as long per expiry in a row (timeouts) until a reply
	// comes. A whole window expiring at once was a host stall more often
	// than a loss (a 3 ms pause of the peer's process resent 64 packets
	// on loopback). When the copy the first expiry in a row gave up on is
	// answered after all (rtoSeq, sent at rtoSent), the timeout was
	// spurious (Eifel): rtoFloor rises to twice the delay that answer took.
	timeouts  uint8
	rtoFloor  time.Duration
	floorBase time.Duration // where rtoFloor started (relaxFloor returns toward it)
	floorAt   Time          // when rtoFloor last rose or relaxed
	rtoSeq    uint32
	rtoSent   Time
	orders    uint64 // stamps slots' order: the last clientSlot.order given
	sendq     sendQueue
	free      slotStack

	waitStart Time // start of the current stretch with something outstanding
	lastSent  Time

	// connectDue is when the connect fails unanswered: FailureTimeout
	// after it started, or after the latest retry that extended it.
	connectDue, nextConnect Time
	offer                   wire.Connect
	// The cookie a server under a connect flood asked this connect to echo
	// (wire.CodeRetry), and how many retries have extended the connect.
	cookie    wire.Cookie
	hasCookie bool
	retries   uint8

	pingOut    bool
	pingSeq    uint32
	pingSentAt Time
	pingTries  uint8

	challengeOK Time // when a path challenge may next make it resend (migrate.go)

	// The controller is most of the struct's size (over a kilobyte):
	// last, so that the fields every call touches share a few cache
	// lines, and a session without congestion control never loads it.
	cc cc.Controller
}

// seqMark is the largest sequence number answered on a path, if any.
type seqMark struct {
	seq uint32
	ok  bool
}

// overtaken reports whether packets sent after seq on path were answered
// and at least thresh sequence numbers later.
func (cs *clientSide) overtaken(seq uint32, path uint8, thresh uint32) bool {
	m := cs.largest[path]
	return m.ok && seqBefore(seq, m.seq) && m.seq-seq >= thresh
}

// largestAnswered is the newest sequence number answered on any path.
func (cs *clientSide) largestAnswered() (seq uint32, ok bool) {
	for _, m := range cs.largest {
		if m.ok && (!ok || seqBefore(seq, m.seq)) {
			seq, ok = m.seq, true
		}
	}
	return seq, ok
}

// nextLive returns the first slot at or above i that is not free (a call
// in it, or canceling), or -1. The timer's walks visit only these: a
// slot is a few cache lines, and with thousands of sessions a walk over
// every slot of a session was a cache miss per slot, for one busy slot.
func (cs *clientSide) nextLive(i int) int { return cs.live.next(uint32(i)) }

func (cs *clientSide) busy() bool { return cs.pending > 0 || cs.cancelsN > 0 || cs.pingOut }

func (cs *clientSide) nextSeq() uint32 {
	cs.txSeq++
	return cs.txSeq
}

// ackRecord removes in-flight record i because the server has its packet,
// returning its credit.
func (cs *clientSide) ackRecord(i int) inflight {
	r := cs.flight.removeAt(i)
	cs.slots[r.slot].nflight--
	cs.avail++
	return r
}

// dropSlotRecords removes every in-flight record of slot i and returns their
// credits. Replies still on the wire will find no record and be ignored.
func (cs *clientSide) dropSlotRecords(i int) {
	if cs.slots[i].nflight == 0 {
		return
	}
	n := cs.flight.removeSlot(uint16(i))
	cs.slots[i].nflight -= n
	cs.avail += n
}

// ackPacket records that the server has packet (kind, idx) of slot i, however
// we learned it, and drops any copy of it still in flight; news of a packet
// restarts the retransmission timer like a reply does.
func (cs *clientSide) ackPacket(now Time, i int, kind pktKind, idx uint32) {
	if cs.slots[i].nflight == 0 {
		return
	}
	if j := cs.flight.findPacket(uint16(i), kind, idx); j >= 0 {
		cs.ackRecord(j)
		cs.lastAck = now
	}
}

// callQueue is the FIFO of calls waiting for a free slot.
type callQueue struct{ ring[call] }

// remove takes the call with id out of the queue, keeping order.
func (q *callQueue) remove(id CallID) (call, bool) {
	for i := range q.n {
		if q.at(i).id != id {
			continue
		}
		c := *q.at(i)
		for j := i; j < q.n-1; j++ {
			*q.at(j) = *q.at(j + 1)
		}
		*q.at(q.n - 1) = call{}
		q.n--
		return c, true
	}
	return call{}, false
}
