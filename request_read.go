package erpc

import (
	"context"
	"net/netip"
	"runtime"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
)

// A handle's reads: each takes a reference for as long as it reads, so
// that the endpoint cannot recycle the request under it (see Request).

// hold takes a reference to q's request, setting the phase bits set at
// the same time, if q is still live: its generation, not recycled, and
// none of the phase bits in busy set. It returns nil otherwise. The
// request's fields stay this request's until r.release.
func (q Request) hold(busy, set uint64) *request {
	r := q.r
	if r == nil {
		return nil
	}
	for {
		s := r.state.Load()
		if s>>genShift != q.gen || s&refMask == 0 || s&busy != 0 {
			return nil
		}
		if s&refMask == refMask { // saturated: one more would carry into the generation
			runtime.Gosched() // the readers holding it let go after a few loads
			continue
		}
		if r.state.CompareAndSwap(s, (s+refOne)|set) {
			return r
		}
	}
}

// spent is the phase in which a handle answers zero values.
const spent = phAnswering | phAnswered

// Data is the request message. It is valid until the request is answered;
// after that, and on a zero Request, Data is nil.
func (q Request) Data() []byte {
	r := q.hold(spent, 0)
	if r == nil {
		return nil
	}
	d := r.data
	r.release(false)
	return d
}

// Method is the name the handler was registered under ("" on a spent
// handle).
func (q Request) Method() string {
	r := q.hold(spent, 0)
	if r == nil {
		return ""
	}
	name := r.handler.name
	r.release(false)
	return name
}

// Peer is the address of the client that sent the request (the zero
// AddrPort on a spent handle).
func (q Request) Peer() netip.AddrPort {
	r := q.hold(spent, 0)
	if r == nil {
		return netip.AddrPort{}
	}
	p := r.peer
	r.release(false)
	return p
}

// Metadata is what the caller sent with the request, nil if nothing (and
// on a spent handle).
func (q Request) Metadata() Metadata {
	r := q.hold(spent, 0)
	if r == nil {
		return nil
	}
	md := r.md
	r.release(false)
	return md
}

// Deadline is the caller's deadline for the request, if it sent one (none
// on a spent handle).
func (q Request) Deadline() (time.Time, bool) {
	r := q.hold(spent, 0)
	if r == nil {
		return time.Time{}, false
	}
	dl, ok := r.dl, r.hasDL
	r.release(false)
	return dl, ok
}

// Context is the request's context: it carries the caller's deadline and
// is canceled when the caller cancels the call, its session ends, the
// endpoint closes, or the request is answered. Each request has its own,
// never reused, so it may be kept. On a spent handle it is a canceled
// context that carries nothing.
func (q Request) Context() context.Context {
	r := q.hold(spent, 0)
	if r == nil {
		return closedContext
	}
	c := r.context()
	r.release(false)
	return c
}

// ResponseBuffer returns n bytes for the response: Respond with (part of)
// it costs no copy. The first call on a live handle gets the request's
// response memory, which is the endpoint's from then on: build the
// response there and do not touch it after the answer. Any other call
// (a second one, one on a spent handle, one from a goroutine that loses
// the answer) gets fresh memory of its own, which no answer shares and
// which Respond copies; so a goroutine that writes into its buffer
// cannot change an answer another goroutine gave.
func (q Request) ResponseBuffer(n int) []byte {
	if n <= 0 {
		return []byte{} // nothing to hand out
	}
	if r := q.hold(spent|phOutGiven, phOutGiven); r != nil {
		out := r.out
		if cap(out) < n { // too small: not handed out after all
			r.state.And(^uint64(phOutGiven))
		}
		r.release(false)
		if cap(out) >= n {
			return out[:n]
		}
	}
	return make([]byte, n, proto.BufferCap(n))
}

// The run's own reads, for the handlers erpc wraps around the user's
// (Handle, Register): they read their request while the run's reference
// keeps its fields, before they answer, and give the handle to no other
// goroutine; so they need no reference of their own, which saves the hot
// path two atomic operations a read.
func (q Request) runData() []byte             { return q.r.data }
func (q Request) runContext() context.Context { return q.r.context() }

// runBuffer is the response memory, or fresh memory if it is too small.
// It stays the request's: nobody else can have been given it.
func (q Request) runBuffer(n int) []byte {
	if cap(q.r.out) >= n {
		return q.r.out[:n]
	}
	return make([]byte, n, proto.BufferCap(n))
}
