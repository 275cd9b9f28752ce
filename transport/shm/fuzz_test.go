package shm

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
)

// FuzzRingConsumer: the consumer reads records a peer process wrote into
// shared memory, so any ring content must end in records that lie inside
// the ring, or in errCorrupt, never in a panic or a loop; what it reads
// in one pass adds up to at most one lap (stamps of a later lap cannot
// match bytes that do not change); take never takes a record that costs
// more than its room.
func FuzzRingConsumer(f *testing.F) {
	const size = 256
	var head atomic.Uint64
	ring := make([]byte, size)
	p := newProducer(&head, ring)
	p.put([]byte("head"), []byte("payload"))
	p.put(nil, nil)
	f.Add(append([]byte(nil), ring...))
	f.Add(binary.LittleEndian.AppendUint64(nil, 1))
	f.Add(make([]byte, size))
	f.Fuzz(func(t *testing.T, in []byte) {
		var head atomic.Uint64
		data := make([]byte, size)
		copy(data, in)
		c := newConsumer(&head, data)
		total := 0
		for d, ok := c.next(); ok; d, ok = c.next() {
			if total += len(d); total > size {
				t.Fatalf("records add up to %d bytes in a %d-byte ring", total, size)
			}
		}
		err := c.end()
		if err != nil && err != errCorrupt {
			t.Fatalf("unexpected error %v", err)
		}
		if c.pos > 2*size {
			t.Fatalf("consumer ran to %d in a %d-byte ring", c.pos, size)
		}
		if head.Load() != c.pos {
			t.Fatalf("head %d not handed back up to %d", head.Load(), c.pos)
		}
		// The same ring through take, with a room of its own: a record
		// taken never costs more than the room (pad included).
		var head2 atomic.Uint64
		c2 := newConsumer(&head2, data)
		room := uint64(len(in))%(2*size) + 1
		for {
			before := c2.pos
			if _, ok := c2.take(room); !ok {
				break
			}
			if cost := c2.pos - before; cost > room {
				t.Fatalf("a record cost %d bytes of ring, room %d", cost, room)
			}
			if c2.pos > 2*size {
				t.Fatalf("consumer ran to %d in a %d-byte ring", c2.pos, size)
			}
		}
		if err := c2.end(); err != nil && err != errCorrupt {
			t.Fatalf("unexpected error %v", err)
		}
	})
}
