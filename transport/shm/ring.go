package shm

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"unsafe"
)

// A ring is a single-producer, single-consumer queue of records in a byte
// area of power-of-two size, shared by two processes.
//
// A record's "ready" mark travels with its bytes (SHRIMP's lesson: the
// arguments and the flag in one transfer). Each record starts with a
// 16-byte header whose first word is the record's stream position plus
// one (its stamp), followed by the datagram's length (uint32) and a word
// holding the kind (low 16 bits) and the gap (high 16 bits), little
// endian, then gap bytes, then the datagram, padded to a multiple of 16.
// The gap (under 64 bytes, and 0 but for a datagram with a large body)
// puts the body of the datagram, behind its head (the engine's header),
// on a cache line: both copies of a large message, into the ring and out
// of it, then run at memmove's full speed. The
// producer writes the length, kind and bytes, then stores the stamp with
// an atomic store; the consumer polls the stamp of the record at its own
// position with an atomic load, and when it matches, the bytes are there
// (Go's atomics are sequentially consistent). A small datagram and its
// mark share a cache line or two, which the consumer's one miss brings
// over, where a separate counter cost a miss of its own before the
// record's could even start.
//
// A stamp can only match at the position it was written for: stamps of
// earlier laps name earlier positions. Bytes of an earlier lap's record
// can lie where the next header will start, so the producer clears the
// stamp word after each record before it stamps the record: the consumer
// never reads stale data as a mark.
//
// One 64-bit counter lives beside the area: head, the bytes the consumer
// has handed back, which the producer reads only when its cached copy
// says the ring is full. Each side keeps its own position in a local
// variable, starting at 0 (never loaded from shared memory, which the peer
// may have set to anything); every value read from shared memory is
// checked before use. A record never wraps: if it does not fit before the
// end of the area, the producer fills the rest with a pad record and
// starts the record at offset 0 (so a pad is never at offset 0, is shorter
// than the largest record with its gap, and a call of next passes at most
// one pad).
// No record holds more than maxDatagram bytes, nor a gap of 64 or more.

const (
	// maxDatagram is the largest datagram any transport of this package
	// sends (MaxDatagram is at most this): a record longer than that is
	// corrupt.
	maxDatagram = 256 << 10

	recHeader = 16
	recData   = 1
	recPad    = 2

	// recAlign is the line a large datagram's body starts on (gapAt),
	// alignMin the body size from which it does: memmove copies with
	// REP MOVS from 2 KiB on.
	recAlign = 64
	alignMin = 2048
)

// errCorrupt reports a ring whose records make no sense: a peer that wrote
// garbage. The connection is dropped.
var errCorrupt = errors.New("shm: corrupt ring")

func align16(n uint64) uint64 { return (n + 15) &^ 15 }

// stampAt is the stamp word of the header at off.
func stampAt(data []byte, off uint64) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&data[off]))
}

// producer is the writing side of a ring.
type producer struct {
	head       *atomic.Uint64
	data       []byte
	size, mask uint64
	pos        uint64 // our position: bytes ever written
	headCache  uint64 // last head seen: saves loading the shared word
}

func newProducer(head *atomic.Uint64, data []byte) producer {
	// pos and headCache start at 0: a fresh ring is empty (and zeroed:
	// no stamp matches).
	return producer{head: head, data: data, size: uint64(len(data)), mask: uint64(len(data)) - 1}
}

// maxRecord is the largest datagram the ring carries: half the area less
// a header, so that a record, its pad and the cleared stamp after it
// always fit once the consumer has caught up.
func (p *producer) maxRecord() int { return int(p.size/2) - 2*recHeader }

// gapAt is the gap a record at off leaves between its header and its
// datagram, so that the body of the datagram, after head bytes, starts on
// a cache line. A large copy into a line-aligned destination takes
// memmove's fastest path (REP MOVS, which writes whole lines without
// reading them first); into one 8 bytes off a line the copy into the ring
// ran at three quarters of that speed on a Xeon (docs/benchmarks/shm.md).
func gapAt(off uint64, head int) uint64 {
	return -(off + recHeader + uint64(head)) & (recAlign - 1)
}

// put writes one record holding a followed by b and makes it visible to
// the consumer. It returns false if the ring has no room (or the record is
// too large).
func (p *producer) put(a, b []byte) bool {
	n := uint64(len(a) + len(b))
	if n > uint64(p.maxRecord()) {
		return false
	}
	// Only a large body is aligned: a small datagram's record stays
	// compact (a call's header and data in as few lines as possible).
	align := len(b) >= alignMin && n+recAlign <= uint64(p.maxRecord())
	off := p.pos & p.mask
	gap := uint64(0)
	if align {
		gap = gapAt(off, len(a))
	}
	total := recHeader + align16(gap+n)
	need := total
	padded := off+total > p.size
	if padded {
		// The record starts at 0, after a pad up to the end of the area.
		if align {
			gap = gapAt(0, len(a))
		}
		total = recHeader + align16(gap+n)
		need = p.size - off + total
	}
	// Room for the record and the stamp word cleared after it.
	if p.pos+need+recHeader-p.headCache > p.size {
		p.headCache = p.head.Load()
		if p.pos+need+recHeader-p.headCache > p.size {
			return false
		}
	}
	padAt, padPos := off, p.pos
	if padded {
		p.pos += p.size - off
		off = 0
	}
	binary.LittleEndian.PutUint32(p.data[off+8:], uint32(n))
	binary.LittleEndian.PutUint32(p.data[off+12:], recData|uint32(gap)<<16)
	start := off + recHeader + gap
	copy(p.data[start:], a)
	copy(p.data[start+uint64(len(a)):], b)
	stampAt(p.data, (off+total)&p.mask).Store(0)
	stampAt(p.data, off).Store(p.pos + 1)
	if padded {
		// The pad last: the consumer, at the pad, finds the record
		// behind it complete.
		binary.LittleEndian.PutUint32(p.data[padAt+8:], 0)
		binary.LittleEndian.PutUint32(p.data[padAt+12:], recPad)
		stampAt(p.data, padAt).Store(padPos + 1)
	}
	p.pos += total
	return true
}

// consumer is the reading side of a ring. Use it as
//
//	for data, ok := c.next(); ok; data, ok = c.next() { use(data) }
//	err := c.end()
//
// data stays valid until the next call of next or end, which may hand its
// space back to the producer.
type consumer struct {
	head       *atomic.Uint64
	data       []byte
	size, mask uint64
	pos        uint64 // our position: bytes ever consumed
	freed      uint64 // head last published
	err        error
}

func newConsumer(head *atomic.Uint64, data []byte) consumer {
	// pos and freed start at 0, like the producer's position.
	return consumer{head: head, data: data, size: uint64(len(data)), mask: uint64(len(data)) - 1}
}

// pending reports whether the record at our position is ready: one load,
// from the cache line that holds the record's first bytes.
func (c *consumer) pending() bool {
	return c.err == nil && stampAt(c.data, c.pos&c.mask).Load() == c.pos+1
}

// next returns the next ready record, or false when there is none (or the
// ring is corrupt: see end).
func (c *consumer) next() ([]byte, bool) { return c.take(^uint64(0)) }

// take returns the next ready record if it takes at most room bytes of
// ring (its header and padding, and the pad before it if it follows one);
// a larger one stays for a later call. It returns false when there is
// none, when it does not fit in room, or when the ring is corrupt (see
// end). A record longer than maxDatagram, or a pad longer than the largest
// record, is corruption: no producer of ours writes one, and a peer that
// does must not hand the engine a datagram of megabytes, nor make one call
// skip most of a ring.
func (c *consumer) take(room uint64) ([]byte, bool) {
	if !c.pending() {
		return nil, false
	}
	if c.pos-c.freed >= c.size/4 { // free space early during long batches
		c.head.Store(c.pos)
		c.freed = c.pos
	}
	off := c.pos & c.mask
	n := uint64(binary.LittleEndian.Uint32(c.data[off+8:]))
	word := binary.LittleEndian.Uint32(c.data[off+12:]) // kind and gap: read once
	skip := uint64(0)
	if word == recPad {
		// A producer pads only a record that does not fit before the
		// end of the area: never at 0 (pads chained lap after lap, a
		// peer restamping offset 0, would hold this call with no record
		// for a budget to count), never longer than a record, and it
		// publishes the record at 0 before the pad.
		skip = c.size - off
		if off == 0 || skip > recHeader+recAlign+maxDatagram {
			c.err = errCorrupt
			return nil, false
		}
		if stampAt(c.data, 0).Load() != c.pos+skip+1 {
			// Not yet: pass the pad if room allows, so that pending
			// (which Wait polls) does not report it ready again.
			if skip <= room {
				c.pos += skip
			}
			return nil, false
		}
		off = 0
		n = uint64(binary.LittleEndian.Uint32(c.data[8:]))
		word = binary.LittleEndian.Uint32(c.data[12:])
	}
	gap := uint64(word >> 16)
	total := recHeader + align16(gap+n)
	if word&0xFFFF != recData || gap >= recAlign || n > maxDatagram || off+total > c.size {
		c.err = errCorrupt
		return nil, false
	}
	if skip+total > room {
		return nil, false
	}
	c.pos += skip + total
	start := off + recHeader + gap
	return c.data[start : start+n : start+n], true
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
