package stream

import "errors"

// Sender is the sending side of one direction: message numbers and the
// credit the receiver granted.
type Sender struct {
	next       uint64 // the next message's number
	sentBytes  uint64
	msgLimit   uint64
	byteLimit  uint64
	window     uint64 // the receiver's window, as it announced it
	byteWindow uint64
	closed     bool
}

// NewSender starts with the receiver's initial window, which also bounds
// every later grant.
func NewSender(msgs, bytes uint64) Sender {
	return Sender{msgLimit: msgs, byteLimit: bytes, window: msgs, byteWindow: bytes}
}

// CanSend reports whether the credit allows one more message now.
func (s *Sender) CanSend() bool {
	return !s.closed && s.next < s.msgLimit && s.sentBytes < s.byteLimit
}

// Sent records a message of n bytes and returns its number. The caller
// checked CanSend.
func (s *Sender) Sent(n int) uint64 {
	seq := s.next
	s.next++
	s.sentBytes += uint64(n)
	return seq
}

// Grant raises the credit to the receiver's cumulative limits; a grant
// older than one already seen changes nothing. A receiver grants what it
// has consumed plus its window, and it consumes no more than was sent:
// a grant beyond what was sent plus the window comes from a hostile or
// broken peer. Grant clamps it to that bound (the credit never exceeds
// the announced window) and reports it, so that no grant can make the
// sender queue more than the window the receiver announced.
func (s *Sender) Grant(msgLimit, byteLimit uint64) (clamped bool) {
	maxMsgs, maxBytes := s.next+s.window, s.sentBytes+s.byteWindow
	clamped = msgLimit > maxMsgs || byteLimit > maxBytes
	s.msgLimit = max(s.msgLimit, min(msgLimit, maxMsgs))
	s.byteLimit = max(s.byteLimit, min(byteLimit, maxBytes))
	return clamped
}

// Close ends the direction and returns the final message count.
func (s *Sender) Close() uint64 {
	s.closed = true
	return s.next
}

// Closed reports whether Close was called.
func (s *Sender) Closed() bool { return s.closed }

// Count is the number of messages sent.
func (s *Sender) Count() uint64 { return s.next }

// Errors a Receiver refuses a frame with. A peer that follows the
// protocol never causes one (duplicates aside, which it never sends
// either: every frame travels in exactly one erpc request or response).
var (
	ErrDuplicate   = errors.New("stream: message received twice")
	ErrOutOfWindow = errors.New("stream: message beyond the granted window")
	ErrBeyondEnd   = errors.New("stream: message beyond the end of the stream")
	ErrBadEnd      = errors.New("stream: inconsistent end of stream")
)

// Receiver is the receiving side of one direction: a reorder buffer of
// at most W messages and B bytes (plus one message), delivered in order.
type Receiver struct {
	window     uint64
	byteWindow uint64
	maxMsg     uint64
	next       uint64 // the next message to deliver
	ring       []slot
	buffered   int
	bufBytes   uint64
	consumed   uint64 // bytes delivered
	final      uint64
	hasFinal   bool
	grantMsgs  uint64 // the limits last granted
	grantBytes uint64
	lent       []byte // the message Next returned last, recycled at the next Next
	free       [][]byte
	freeBytes  uint64
	highMsgs   int // the most messages and bytes ever buffered at once
	highBytes  uint64
}

type slot struct {
	msg     []byte
	present bool
}

// NewReceiver makes a receiver with a window of msgs messages and bytes
// bytes for messages of at most maxMsg bytes; its initial grant is the
// whole window. Its reorder ring starts small and grows, up to the
// window, as far as the sender gets ahead.
func NewReceiver(msgs, bytes, maxMsg int) Receiver {
	return Receiver{window: uint64(msgs), byteWindow: uint64(bytes), maxMsg: uint64(maxMsg),
		ring: make([]slot, min(msgs, initialRing)), grantMsgs: uint64(msgs), grantBytes: uint64(bytes)}
}

const initialRing = 16

// slotOf is message seq's slot, growing the ring to hold it (seq is
// within the window).
func (r *Receiver) slotOf(seq uint64) *slot {
	n := uint64(len(r.ring))
	if seq-r.next >= n {
		size := n
		for seq-r.next >= size {
			size *= 2
		}
		ring := make([]slot, min(size, r.window))
		for i := r.next; i < r.next+n; i++ {
			ring[i%uint64(len(ring))] = r.ring[i%n]
		}
		r.ring = ring
		n = uint64(len(ring))
	}
	return &r.ring[seq%n]
}

// Accept takes message seq, copying msg. It refuses a message it has had,
// one beyond the window (in messages, or in bytes: B plus one message),
// and one beyond the end; none of them changes the state.
func (r *Receiver) Accept(seq uint64, msg []byte) error {
	switch {
	case seq < r.next:
		return ErrDuplicate
	case r.hasFinal && seq >= r.final:
		return ErrBeyondEnd
	case seq-r.next >= r.window:
		return ErrOutOfWindow
	}
	s := r.slotOf(seq)
	switch {
	case s.present:
		return ErrDuplicate
	case uint64(len(msg)) > r.maxMsg, r.bufBytes+uint64(len(msg)) > r.byteWindow+r.maxMsg:
		return ErrOutOfWindow
	}
	s.msg = append(r.take(len(msg)), msg...)
	s.present = true
	r.buffered++
	r.bufBytes += uint64(len(msg))
	if r.buffered > r.highMsgs {
		r.highMsgs = r.buffered
	}
	r.highBytes = max(r.highBytes, r.bufBytes)
	return nil
}

// take returns an empty buffer with room for n bytes, from the free list
// if one fits.
func (r *Receiver) take(n int) []byte {
	for i := len(r.free) - 1; i >= 0; i-- {
		if b := r.free[i]; cap(b) >= n {
			last := len(r.free) - 1
			r.free[i] = r.free[last]
			r.free[last] = nil
			r.free = r.free[:last]
			r.freeBytes -= freeCost(b)
			return b[:0]
		}
	}
	return make([]byte, 0, n)
}

// KeptFreeBytes bounds a receiver's free list, each buffer counted with
// its slice header (freeCost): enough for a steady stream of small
// messages to allocate nothing, and for a bulk flow of them to reuse
// about a thousand buffers (a bulk flow allocates the rest, one a
// message), little enough that a stream idle after a
// burst keeps a few kilobytes, not a window.
const KeptFreeBytes = 64 << 10

func freeCost(b []byte) uint64 { return uint64(cap(b)) + 24 }

// recycle keeps b for later messages while the free list stays within
// KeptFreeBytes (and a window); a larger buffer goes to the garbage
// collector.
func (r *Receiver) recycle(b []byte) {
	if b == nil || r.freeBytes+freeCost(b) > min(r.byteWindow, KeptFreeBytes) ||
		uint64(len(r.free)) >= r.window {
		return
	}
	r.free = append(r.free, b)
	r.freeBytes += freeCost(b)
}

// Next returns the next message in order, if it has arrived. The message
// is the receiver's: valid until the next call of Next.
func (r *Receiver) Next() ([]byte, bool) {
	r.recycle(r.lent)
	r.lent = nil
	s := &r.ring[r.next%uint64(len(r.ring))]
	if !s.present {
		return nil, false
	}
	msg := s.msg
	*s = slot{}
	r.next++
	r.buffered--
	r.bufBytes -= uint64(len(msg))
	r.consumed += uint64(len(msg))
	r.lent = msg
	return msg, true
}

// End records the sender's final count. It refuses a count below what
// was delivered, or beyond the window, and one that differs from an
// earlier End.
func (r *Receiver) End(final uint64) error {
	switch {
	case r.hasFinal && final != r.final:
		return ErrBadEnd
	case final < r.next, final-r.next > r.window:
		return ErrBadEnd
	}
	n := uint64(len(r.ring))
	for seq := final; seq < r.next+n; seq++ { // buffered beyond the end: refused
		if r.ring[seq%n].present {
			return ErrBadEnd
		}
	}
	r.final, r.hasFinal = final, true
	return nil
}

// Done reports whether every message up to the end has been delivered.
func (r *Receiver) Done() bool { return r.hasFinal && r.next == r.final }

// Ended reports whether the sender's final count is known.
func (r *Receiver) Ended() bool { return r.hasFinal }

// GrantDue reports whether the application consumed half a window since
// the last grant: the sender may be waiting for credit.
func (r *Receiver) GrantDue() bool {
	if r.hasFinal {
		return false
	}
	return r.next+r.window-r.grantMsgs >= max(r.window/2, 1) ||
		r.consumed+r.byteWindow-r.grantBytes >= max(r.byteWindow/2, 1)
}

// TakeGrant returns the cumulative limits to grant and records them.
func (r *Receiver) TakeGrant() (msgLimit, byteLimit uint64) {
	r.grantMsgs, r.grantBytes = r.next+r.window, r.consumed+r.byteWindow
	return r.grantMsgs, r.grantBytes
}

// Buffered is the messages and bytes held now, and HighWater the most
// held at once.
func (r *Receiver) Buffered() (int, uint64)  { return r.buffered, r.bufBytes }
func (r *Receiver) HighWater() (int, uint64) { return r.highMsgs, r.highBytes }

// Delivered is the number of messages delivered.
func (r *Receiver) Delivered() uint64 { return r.next }

// Received reports whether the end is known and every message up to it
// has arrived (delivered or buffered).
func (r *Receiver) Received() bool { return r.hasFinal && r.next+uint64(r.buffered) == r.final }
