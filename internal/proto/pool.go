package proto

import (
	"math/bits"
	"unsafe"

	"github.com/erpc-go/erpc/internal/wire"
)

// Server memory. Every byte the server holds for its clients is counted
// and bounded, by capacity (what the memory costs), not by length:
//
//   - held: request buffers being received, handled or orphaned, and the
//     responses slots keep until their client moves on (at-most-once), both
//     within MaxHeldBytes; a request that would exceed it is refused with a
//     NACK at once (NEBULA). Requests are also counted, within
//     MaxHeldRequests.
//   - pooled: free buffers kept for reuse, within PoolBytes.
//
// Nothing else keeps memory per session or per pooled request: an idle
// session holds only its slots' saved responses, and a released request
// gives its buffer back to the pool. Buffers come in power-of-two classes
// from minClass up, so a returned buffer fits the next message of its class.

// minClassBytes is the smallest buffer the pool hands out.
const minClassBytes = 64

// BufferCap is the capacity of the pool buffer that holds n bytes: memory
// of that capacity that a driver hands to Respond can be reused by the
// pool afterwards.
func BufferCap(n int) int { return classCap(n) }

// classCap is the capacity of the pool buffer that holds n bytes.
func classCap(n int) int {
	if n <= minClassBytes {
		return minClassBytes
	}
	return 1 << bits.Len(uint(n-1))
}

// admit decides whether a new request of size bytes fits: the count of held
// requests and their bytes are bounded engine-wide, so a full server refuses
// at once (NACK) instead of queueing work that would miss its deadline.
func (e *Engine) admit(size int) bool {
	return e.heldReqs-e.parkedReqs < e.cfg.MaxHeldRequests && e.heldBytes+classCap(size) <= e.cfg.MaxHeldBytes
}

// Park marks request h, being handled, as waiting for an event rather
// than for work (a stream's exchange the server answers when one of the
// session's streams has output): it no longer counts against
// MaxHeldRequests, which bounds the work a server queues, so that idle
// streams cannot make a server refuse calls. Its message goes back to
// the pool (the driver must be done with Data: it is nil after), so that
// it holds no bytes either: a parked request may wait for good, and the
// batch it came in (up to the session's message limit) would otherwise
// fill MaxHeldBytes. It stays among Stats.HeldRequests (and
// Stats.ParkedRequests). The driver bounds how many it parks (erpc: two
// a session), and answers each, as any request, once its session ends
// (EventRequestCanceled), which releases it.
func (e *Engine) Park(h ReqHandle) error {
	r := h.live()
	if r == nil || r.state != reqHandling {
		return ErrStaleRequest
	}
	if !r.parked {
		r.parked = true
		e.parkedReqs++
	}
	if r.data != nil { // not in flight: a request's buffer is only received into
		e.heldBytes -= cap(r.data)
		e.bufs.put(r.data)
		r.data = nil
	}
	return nil
}

// newRequest takes a request from the pool for the request h starts.
func (e *Engine) newRequest(s *session, h *wire.Header) *Request {
	var r *Request
	if n := len(e.reqPool); n > 0 {
		r = e.reqPool[n-1]
		e.reqPool[n-1] = nil
		e.reqPool = e.reqPool[:n-1]
	} else {
		r = new(Request)
	}
	size := int(h.MsgSize)
	r.state = reqReceiving
	r.sess = s
	r.slot = uint16(s.slotOf(h.ReqNum))
	r.reqNum = h.ReqNum
	r.reqType = h.ReqType
	r.pkts = uint32(wire.NumPackets(size, s.dpp))
	r.gotN = 0
	r.got.reset(r.pkts)
	r.owed = false
	r.deadline = Never
	r.meta = false
	r.data = e.bufs.get(size)
	e.heldReqs++
	e.heldBytes += cap(r.data)
	return r
}

// releaseRequest returns r to the pool; handles to it go stale. Its buffer
// goes back to the buffer pool unless a slot took it as its response.
func (e *Engine) releaseRequest(r *Request) {
	e.forgive(r)
	e.heldReqs--
	if r.parked {
		r.parked = false
		e.parkedReqs--
	}
	if r.data != nil {
		e.heldBytes -= cap(r.data)
		e.bufs.put(r.data)
		r.data = nil
	}
	r.got.shrink(16)
	r.gen++
	r.state = reqFree
	r.sess = nil
	r.tag = nil
	if len(e.reqPool) < e.cfg.MaxHeldRequests {
		e.reqPool = append(e.reqPool, r)
	}
}

// keepResponse makes resp the response slot sl keeps, and takes the memory
// it lives in: the request's own buffer if resp points into it (an echo
// costs no copy), otherwise resp itself, which the caller hands over.
func (e *Engine) keepResponse(sl *serverSlot, r *Request, resp []byte) {
	sl.resp, sl.respMem = nil, nil
	if len(resp) == 0 {
		return
	}
	sl.resp = resp
	if within(resp, r.data) {
		sl.respMem = r.data[:cap(r.data)]
		r.data = nil // counted as held already; the slot's now
	} else {
		sl.respMem = resp[:cap(resp)]
		e.heldBytes += cap(resp)
	}
	e.savedBytes += cap(sl.respMem)
}

// dropResponse frees the response slot sl keeps. A packet queued this round
// may still point into it, so then it returns to the pool only after the
// next Outgoing, when that packet has been sent.
func (e *Engine) dropResponse(sl *serverSlot) {
	if sl.respMem != nil {
		n := cap(sl.respMem)
		e.heldBytes -= n
		e.savedBytes -= n
		if sl.respRound == e.round {
			e.freeLater = append(e.freeLater, sl.respMem)
		} else {
			e.bufs.put(sl.respMem)
		}
	}
	sl.resp, sl.respMem = nil, nil
}

// Buffer returns a buffer of length n from the engine's pool, for the
// driver to build a response in and hand to Respond. The caller owns it
// until then.
func (e *Engine) Buffer(n int) []byte { return e.bufs.get(n) }

// Recycle gives the pool back a buffer the caller got from Buffer and no
// longer uses.
func (e *Engine) Recycle(b []byte) { e.bufs.put(b) }

// Within reports whether sub points into buf's memory (anywhere up to its
// capacity). It compares addresses only: both slices are live, so neither
// can move or be freed meanwhile.
func Within(sub, buf []byte) bool { return within(sub, buf) }

func within(sub, buf []byte) bool {
	if cap(sub) == 0 || cap(buf) == 0 {
		return false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(sub)))
	return p >= base && p < base+uintptr(cap(buf))
}

// bufPool keeps free message buffers for reuse, in power-of-two size
// classes, up to limit bytes in all. The engine is single-threaded, so
// plain free lists do.
type bufPool struct {
	classes [40][][]byte
	low     [40]int32 // each free list's lowest length since the last sweep (pool_release.go)
	held    int
	limit   int
}

// get returns a buffer of length n and capacity classCap(n), or nil for 0.
func (p *bufPool) get(n int) []byte {
	if n == 0 {
		return nil
	}
	c := bits.Len(uint(classCap(n) - 1))
	if l := len(p.classes[c]); l > 0 {
		b := p.classes[c][l-1]
		p.classes[c][l-1] = nil
		p.classes[c] = p.classes[c][:l-1]
		p.held -= cap(b)
		p.notePoolUse(c, l-1)
		return b[:n]
	}
	return make([]byte, n, 1<<c)
}

// put keeps b if it has a class's capacity and fits within the limit.
func (p *bufPool) put(b []byte) {
	c := cap(b)
	if c < minClassBytes || c&(c-1) != 0 || p.held+c > p.limit {
		return
	}
	k := bits.Len(uint(c - 1))
	if k >= len(p.classes) {
		return
	}
	p.classes[k] = append(p.classes[k], b[:0])
	p.held += c
}
