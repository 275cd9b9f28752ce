package shm

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
)

// A ring is a single-producer, single-consumer queue of records in a byte
// area of power-of-two size, shared by two processes. Two 64-bit counters
// live beside it: tail (bytes ever written, advanced only by the producer)
// and head (bytes ever consumed, advanced only by the consumer). Each side
// keeps its own counter in a local variable, starting at 0 (never loaded
// from the shared word, which the peer may have set to anything), and
// publishes it with an atomic store; it reads the other side's with an
// atomic load, once, into a local that it checks before using it. Go's atomics are
// sequentially consistent, so the bytes of a record written before the
// store of tail are visible to a consumer that loads that tail: a record's
// bytes and its "ready" mark travel in one publish.
//
// A record is an 8-byte header (length uint32, kind uint32, little endian)
// followed by the datagram, padded to a multiple of 8. A record never wraps:
// if it does not fit before the end of the area, the producer fills the rest
// with a pad record (kind recPad) and starts the record at offset 0.

const (
	recHeader = 8
	recData   = 1
	recPad    = 2
)

// errCorrupt reports a ring whose counters or records make no sense: a
// peer that wrote garbage. The connection is dropped.
var errCorrupt = errors.New("shm: corrupt ring")

func align8(n uint64) uint64 { return (n + 7) &^ 7 }

// producer is the writing side of a ring.
type producer struct {
	tail, head *atomic.Uint64
	data       []byte
	size, mask uint64
	pos        uint64 // our tail, published by publish
	headCache  uint64 // last head seen: saves loading the shared word
}

func newProducer(tail, head *atomic.Uint64, data []byte) producer {
	// pos and headCache start at 0: a fresh ring is empty. Loading them
	// would take the peer's word for our own position (an unaligned one
	// would put a record header across the end of the area).
	return producer{tail: tail, head: head, data: data, size: uint64(len(data)), mask: uint64(len(data)) - 1}
}

// maxRecord is the largest datagram the ring carries: half the area, so
// that a record always fits once the consumer has caught up, pad included.
func (p *producer) maxRecord() int { return int(p.size/2) - recHeader }

// put writes one record holding a followed by b, without publishing it. It
// returns false if the ring has no room (or the record is too large).
func (p *producer) put(a, b []byte) bool {
	n := uint64(len(a) + len(b))
	if n > uint64(p.maxRecord()) {
		return false
	}
	total := recHeader + align8(n)
	off := p.pos & p.mask
	need := total
	if off+total > p.size {
		need += p.size - off // the pad up to the end of the area
	}
	if p.pos+need-p.headCache > p.size {
		p.headCache = p.head.Load()
		if p.pos+need-p.headCache > p.size {
			return false
		}
	}
	if need != total {
		binary.LittleEndian.PutUint32(p.data[off:], 0)
		binary.LittleEndian.PutUint32(p.data[off+4:], recPad)
		p.pos += p.size - off
		off = 0
	}
	binary.LittleEndian.PutUint32(p.data[off:], uint32(n))
	binary.LittleEndian.PutUint32(p.data[off+4:], recData)
	copy(p.data[off+recHeader:], a)
	copy(p.data[off+recHeader+uint64(len(a)):], b)
	p.pos += total
	return true
}

// publish makes the records put so far visible to the consumer.
func (p *producer) publish() { p.tail.Store(p.pos) }

// consumer is the reading side of a ring. Use it as
//
//	c.begin()
//	for data, ok := c.next(); ok; data, ok = c.next() { use(data) }
//	err := c.end()
//
// data stays valid until the next call of next or end, which may hand its
// space back to the producer.
type consumer struct {
	tail, head *atomic.Uint64
	data       []byte
	size, mask uint64
	pos        uint64 // our head
	limit      uint64 // tail loaded by begin
	freed      uint64 // head last published
	err        error
}

func newConsumer(tail, head *atomic.Uint64, data []byte) consumer {
	// pos, freed and limit start at 0, like the producer's position.
	return consumer{tail: tail, head: head, data: data, size: uint64(len(data)), mask: uint64(len(data)) - 1}
}

// pending reports whether the producer has published records not yet read.
func (c *consumer) pending() bool { return c.tail.Load() != c.pos }

// begin loads the producer's tail: next returns the records published
// before it.
func (c *consumer) begin() {
	c.limit = c.tail.Load()
	if c.limit-c.pos > c.size || c.limit&7 != 0 {
		c.err, c.limit = errCorrupt, c.pos
	}
}

// next returns the next record, or false when the records published before
// begin are all read (or the ring is corrupt: see end).
func (c *consumer) next() ([]byte, bool) {
	for c.pos != c.limit {
		if c.pos-c.freed >= c.size/4 { // free space early during long batches
			c.head.Store(c.pos)
			c.freed = c.pos
		}
		off := c.pos & c.mask
		n := uint64(binary.LittleEndian.Uint32(c.data[off:]))
		switch binary.LittleEndian.Uint32(c.data[off+4:]) {
		case recPad:
			if c.limit-c.pos < c.size-off {
				break
			}
			c.pos += c.size - off
			continue
		case recData:
			total := recHeader + align8(n)
			if off+total > c.size || c.limit-c.pos < total {
				break
			}
			c.pos += total
			start := off + recHeader
			return c.data[start : start+n : start+n], true
		}
		c.err, c.limit = errCorrupt, c.pos
	}
	return nil, false
}

// end hands the space of the records read back to the producer and reports
// whether the ring turned out corrupt.
func (c *consumer) end() error {
	if c.pos != c.freed {
		c.head.Store(c.pos)
		c.freed = c.pos
	}
	return c.err
}
