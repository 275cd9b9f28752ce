package shm

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"unsafe"
)

// FuzzRingConsumer: the consumer reads records a peer process wrote into
// shared memory, so any ring content must end in records that lie inside
// the ring (whatever the gap before them), or in errCorrupt, never in a panic or a loop; what it reads
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
	// A record with a gap: 24 bytes of data 40 bytes after its header.
	gapped := make([]byte, size)
	binary.LittleEndian.PutUint64(gapped, 1)
	binary.LittleEndian.PutUint32(gapped[8:], 24)
	binary.LittleEndian.PutUint32(gapped[12:], recData|40<<16)
	f.Add(gapped)
	f.Add(binary.LittleEndian.AppendUint64(nil, 1))
	f.Add(make([]byte, size))
	f.Fuzz(func(t *testing.T, in []byte) {
		var head atomic.Uint64
		data := make([]byte, size)
		copy(data, in)
		c := newConsumer(&head, data)
		total := 0
		base := uintptr(unsafe.Pointer(&data[0]))
		for d, ok := c.next(); ok; d, ok = c.next() {
			if at := uintptr(unsafe.Pointer(unsafe.SliceData(d))) - base; at+uintptr(len(d)) > size {
				t.Fatalf("a %d-byte record at %d lies past the end of a %d-byte ring", len(d), at, size)
			}
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
