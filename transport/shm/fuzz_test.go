package shm

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
)

// FuzzRingConsumer: the consumer reads records a peer process wrote into
// shared memory, so any ring content and any tail must end in records that
// lie inside the ring or in errCorrupt, never in a panic or a loop.
func FuzzRingConsumer(f *testing.F) {
	const size = 256
	var tail, head atomic.Uint64
	ring := make([]byte, size)
	p := newProducer(&tail, &head, ring)
	p.put([]byte("head"), []byte("payload"))
	p.put(nil, nil)
	p.publish()
	seed := binary.LittleEndian.AppendUint64(nil, tail.Load())
	f.Add(append(seed, ring...))
	f.Add(binary.LittleEndian.AppendUint64(nil, 8))
	f.Add(append(binary.LittleEndian.AppendUint64(nil, size), make([]byte, size)...))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 8 {
			return
		}
		var tail, head atomic.Uint64
		tail.Store(binary.LittleEndian.Uint64(in))
		data := make([]byte, size)
		copy(data, in[8:])
		c := newConsumer(&tail, &head, data)
		c.begin()
		total := 0
		for d, ok := c.next(); ok; d, ok = c.next() {
			if total += len(d); total > size {
				t.Fatalf("records add up to %d bytes in a %d-byte ring", total, size)
			}
		}
		err := c.end()
		if err == nil && c.pos != tail.Load() {
			t.Fatalf("no error, but stopped at %d before tail %d", c.pos, tail.Load())
		}
		if err != nil && err != errCorrupt {
			t.Fatalf("unexpected error %v", err)
		}
		if head.Load() != c.pos {
			t.Fatalf("head %d not handed back up to %d", head.Load(), c.pos)
		}
	})
}
