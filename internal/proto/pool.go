package proto

import (
	"math/bits"

	"github.com/erpc-go/erpc/internal/wire"
)

// retainLimit is the largest buffer a request or slot keeps for reuse on
// its own; larger ones go back to the engine's shared pool.
const retainLimit = 64 << 10

// admit decides whether a new request of size bytes fits: the count of held
// requests and their bytes are bounded engine-wide, so a full server refuses
// at once (NACK) instead of queueing work that would miss its deadline.
func (e *Engine) admit(size int) bool {
	return e.heldReqs < e.cfg.MaxHeldRequests && e.heldBytes+size <= e.cfg.MaxHeldBytes
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
	r.slot = uint16(h.ReqNum % uint64(s.window))
	r.reqNum = h.ReqNum
	r.reqType = h.ReqType
	r.pkts = uint32(wire.NumPackets(size, s.dpp))
	r.gotN = 0
	r.got.reset(r.pkts)
	r.owed = false
	r.lent = false
	switch {
	case cap(r.data) >= size:
		r.data = r.data[:size]
	case size > retainLimit:
		r.data = e.bufs.get(size)
	default:
		r.data = make([]byte, size, max(size, 2*cap(r.data)))
	}
	e.heldReqs++
	e.heldBytes += size
	return r
}

// releaseRequest returns r to the pool; handles to it go stale.
func (e *Engine) releaseRequest(r *Request) {
	e.forgive(r)
	e.heldReqs--
	e.heldBytes -= len(r.data)
	if cap(r.data) > retainLimit {
		e.bufs.put(r.data)
		r.data = nil
	}
	r.got.shrink(16)
	r.gen++
	r.state = reqFree
	r.sess = nil
	r.tag = nil
	e.reqPool = append(e.reqPool, r)
}

// bufPool keeps large message buffers for reuse, in power-of-two size
// classes, up to limit bytes in all. The engine is single-threaded, so
// plain free lists do.
type bufPool struct {
	classes [40][][]byte
	held    int
	limit   int
}

func (p *bufPool) get(n int) []byte {
	c := bits.Len(uint(n - 1))
	if l := len(p.classes[c]); l > 0 {
		b := p.classes[c][l-1]
		p.classes[c][l-1] = nil
		p.classes[c] = p.classes[c][:l-1]
		p.held -= cap(b)
		return b[:n]
	}
	return make([]byte, n, 1<<c)
}

// put keeps b if it came from get (a power-of-two capacity) and fits.
func (p *bufPool) put(b []byte) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 || p.held+c > p.limit {
		return
	}
	k := bits.Len(uint(c - 1))
	p.classes[k] = append(p.classes[k], b[:0])
	p.held += c
}
