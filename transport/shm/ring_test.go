package shm

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// testRing makes a producer and a consumer over a Go-allocated area, so
// the race detector sees the ring's accesses.
func testRing(size int) (*producer, *consumer) {
	var head atomic.Uint64
	data := make([]byte, size)
	p := newProducer(&head, data)
	c := newConsumer(&head, data)
	return &p, &c
}

func drain(t *testing.T, c *consumer) [][]byte {
	t.Helper()
	var got [][]byte
	for d, ok := c.next(); ok; d, ok = c.next() {
		got = append(got, bytes.Clone(d))
	}
	if err := c.end(); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestRingBasic(t *testing.T) {
	p, c := testRing(1024)
	if c.pending() {
		t.Fatal("empty ring has records")
	}
	if !p.put([]byte("head:"), []byte("payload")) || !p.put(nil, nil) || !p.put([]byte("x"), nil) {
		t.Fatal("put into an empty ring failed")
	}
	if !c.pending() {
		t.Fatal("a record put is not visible")
	}
	got := drain(t, c)
	if len(got) != 3 || string(got[0]) != "head:payload" || len(got[1]) != 0 || string(got[2]) != "x" {
		t.Fatalf("got %q", got)
	}
	if c.pending() {
		t.Fatal("drained ring still pending")
	}
}

func TestRingFull(t *testing.T) {
	p, c := testRing(1024)
	if p.maxRecord() != 512-2*recHeader {
		t.Fatalf("maxRecord %d", p.maxRecord())
	}
	if p.put(make([]byte, p.maxRecord()+1), nil) {
		t.Fatal("put a record over maxRecord")
	}
	n := 0
	for p.put(make([]byte, 100), nil) { // 128 bytes each
		n++
	}
	// The ring keeps room for the header after the last record.
	if n != (1024-recHeader)/128 {
		t.Fatalf("%d records of 128 bytes fit in 1024", n)
	}
	if got := drain(t, c); len(got) != n {
		t.Fatalf("drained %d of %d", len(got), n)
	}
	if !p.put(make([]byte, p.maxRecord()), nil) {
		t.Fatal("no room after the consumer caught up")
	}
}

func TestRingWraparound(t *testing.T) {
	p, c := testRing(256)
	r := rand.New(rand.NewPCG(1, 1))
	var sent, recv uint64
	for round := range 2000 {
		var want [][]byte
		for range r.IntN(4) + 1 {
			b := make([]byte, r.IntN(100))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			split := r.IntN(len(b) + 1)
			if !p.put(b[:split], b[split:]) {
				break
			}
			want = append(want, b)
		}
		sent += uint64(len(want))
		got := drain(t, c)
		recv += uint64(len(got))
		if len(got) != len(want) {
			t.Fatalf("round %d: got %d records, want %d", round, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("round %d record %d differs", round, i)
			}
		}
	}
	if p.pos < 100*256 {
		t.Fatalf("only %d bytes went through: no wraparound tested", p.pos)
	}
	t.Logf("%d records, %d bytes through a 256-byte ring", recv, p.pos)
}

func TestRingCorrupt(t *testing.T) {
	p, c := testRing(256)
	p.put([]byte("ok"), nil)
	binary.LittleEndian.PutUint32(p.data[12:], 77) // unknown kind
	if _, ok := c.next(); ok {
		t.Fatal("read a corrupt record")
	}
	if c.end() != errCorrupt {
		t.Fatal("corrupt record not reported")
	}
	if c.pending() {
		t.Fatal("a corrupt ring still has records")
	}
	p2, c2 := testRing(256)
	p2.put([]byte("ok"), nil)
	binary.LittleEndian.PutUint32(p2.data[8:], 1<<20) // a length past the end
	if _, ok := c2.next(); ok || c2.end() != errCorrupt {
		t.Fatal("impossible length not reported")
	}
}

// TestRingStaleBytesNoStamp: a record's bytes from an earlier lap lie
// where a later lap's header starts; the producer clears the stamp word
// after each record, so those bytes never read as a ready record, even
// when they are exactly the stamp the consumer waits for there.
func TestRingStaleBytesNoStamp(t *testing.T) {
	const size = 512
	p, c := testRing(size)
	// Lap 0: a record of 96 data bytes at 0 (its header 16, it ends at
	// 112), whose bytes 32..39 (ring offset 48) hold size+48+1: the stamp
	// a header at offset 48 of lap 1 would carry.
	b := make([]byte, 96)
	binary.LittleEndian.PutUint64(b[32:], size+48+1)
	// Then records filling lap 0 to its end (240 + 160 bytes), and one of
	// 48 bytes at the start of lap 1: the next header is at offset 48,
	// over the old record's bytes.
	for i, n := range []int{96, 224, 144, 32} {
		data := make([]byte, n)
		if i == 0 {
			data = b
		}
		if !p.put(data, nil) || len(drain(t, c)) != 1 {
			t.Fatalf("record %d of %d bytes", i, n)
		}
	}
	if c.pos != size+48 {
		t.Fatalf("layout moved: consumer at %d, want %d", c.pos, size+48)
	}
	if c.pending() {
		t.Fatal("stale bytes read as a ready record")
	}
}

// TestRingConcurrent runs a producer and a consumer goroutine over a small
// ring and checks every record's checksum and order: small records, and
// records whose bodies are large enough to be aligned (gapAt) with pads and
// gaps of every size.
func TestRingConcurrent(t *testing.T) {
	t.Run("small", func(t *testing.T) { ringConcurrent(t, 4096, 1100, 20000) })
	t.Run("aligned", func(t *testing.T) { ringConcurrent(t, 64<<10, 3*alignMin, 3000) })
}

func ringConcurrent(t *testing.T, size, largest, records int) {
	p, c := testRing(size)
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(2, 2))
		buf := make([]byte, largest)
		for i := 0; i < records; {
			n := 8 + r.IntN(len(buf)-8)
			if r.IntN(8) == 0 {
				n = 8 + r.IntN(32)
			}
			b := buf[:n]
			binary.LittleEndian.PutUint32(b, uint32(i))
			for j := 8; j < n; j++ {
				b[j] = byte(r.Uint32())
			}
			binary.LittleEndian.PutUint32(b[4:], crc32.ChecksumIEEE(b[8:]))
			for !p.put(b[:4], b[4:]) {
				runtime.Gosched()
			}
			i++
		}
	})
	next := 0
	for next < records {
		if !c.pending() {
			runtime.Gosched()
			continue
		}
		for d, ok := c.next(); ok; d, ok = c.next() {
			if seq := int(binary.LittleEndian.Uint32(d)); seq != next {
				t.Fatalf("record %d arrived as %d", seq, next)
			}
			if binary.LittleEndian.Uint32(d[4:]) != crc32.ChecksumIEEE(d[8:]) {
				t.Fatalf("record %d: checksum mismatch", next)
			}
			next++
		}
		if err := c.end(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if c.pending() {
		t.Fatal("records beyond the last")
	}
}

// TestRingPadAtStartCorrupt: a producer pads only a record that does not
// fit before the end of the area, so a pad at offset 0 (a whole lap of
// nothing) is garbage. Taken as a pad, it let a peer that restamps offset
// 0 keep one call of next going lap after lap without a record, which no
// per-record budget sees.
func TestRingPadAtStartCorrupt(t *testing.T) {
	p, c := testRing(256)
	p.put([]byte("x"), nil)
	binary.LittleEndian.PutUint32(p.data[12:], recPad) // the record at 0 becomes a pad
	if d, ok := c.next(); ok {
		t.Fatalf("read %q after a pad at offset 0", d)
	}
	if err := c.end(); err != errCorrupt {
		t.Fatalf("a pad at offset 0: %v, want errCorrupt (consumer at %d)", err, c.pos)
	}
}

// TestRingPadLongerThanRecord: a pad longer than the largest record (one
// at offset 16 of a large ring, skipping most of it) is corruption: no
// producer pads more than the record behind it, and a peer must not make
// one call skip most of a ring.
func TestRingPadLongerThanRecord(t *testing.T) {
	const size = 4 << 20
	p, c := testRing(size)
	p.put(nil, nil) // 16 bytes: the next header is at 16
	p.put([]byte("behind the pad"), nil)
	if _, ok := c.next(); !ok {
		t.Fatal("first record missing")
	}
	// Turn the record at 16 into a pad to the end of the area, with a
	// record at 0 stamped for the position after it.
	binary.LittleEndian.PutUint32(p.data[16+12:], recPad)
	padEnd := uint64(size)
	stampAt(p.data, 0).Store(padEnd + 1)
	if d, ok := c.next(); ok {
		t.Fatalf("read %q behind a %d-byte pad", d, size-16)
	}
	if c.end() != errCorrupt {
		t.Fatal("a pad longer than any record not reported")
	}
}

// TestRingAlignsLargeBodies: a datagram whose body (after its head, the
// engine's header) is large lands in the ring with the body on a cache
// line, whatever the record's offset, across pads and laps, so that both
// copies of a large message run line-aligned; a small datagram's record
// stays compact (no gap). Before the gap, a body behind a 40-byte header
// started 56 bytes into a line.
func TestRingAlignsLargeBodies(t *testing.T) {
	const size = 256 << 10
	p, c := testRing(size)
	r := rand.New(rand.NewPCG(5, 5))
	aligned, small := 0, 0
	for round := range 3000 {
		head := make([]byte, r.IntN(100))
		body := make([]byte, r.IntN(3*alignMin))
		for i := range head {
			head[i] = byte(r.Uint32())
		}
		for i := range body {
			body[i] = byte(r.Uint32())
		}
		before := p.pos
		if !p.put(head, body) {
			t.Fatalf("round %d: no room in an empty ring", round)
		}
		// A small datagram's record: at the producer's position, or at
		// 0 behind a pad if it did not fit before the end.
		start := before & (size - 1)
		if start+recHeader+align16(uint64(len(head)+len(body))) > size {
			start = 0
		}
		d, ok := c.next()
		if !ok || !bytes.Equal(d[:len(head)], head) || !bytes.Equal(d[len(head):], body) {
			t.Fatalf("round %d: the datagram came back wrong", round)
		}
		at := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(d))) - uintptr(unsafe.Pointer(&c.data[0])))
		if len(body) >= alignMin {
			if (at+uint64(len(head)))%recAlign != 0 {
				t.Fatalf("round %d: a %d-byte body behind a %d-byte head starts at %d, %d bytes into a line",
					round, len(body), len(head), at+uint64(len(head)), (at+uint64(len(head)))%recAlign)
			}
			aligned++
		} else {
			if at != start+recHeader {
				t.Fatalf("round %d: a %d-byte datagram starts %d bytes after its record", round, len(d), at-start)
			}
			small++
		}
		if err := c.end(); err != nil {
			t.Fatal(err)
		}
	}
	if aligned < 1000 || small < 500 || p.pos < 10*size {
		t.Fatalf("%d large and %d small datagrams, %d bytes: too few to test", aligned, small, p.pos)
	}
}

// TestRingGapCorrupt: the gap is the peer's to write, so a gap of a line
// or more, or one that puts the datagram past the end of the area, is
// corruption; nothing is read from outside the record.
func TestRingGapCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n, gap uint32
	}{
		{"a gap of a whole line", 32, recAlign},
		{"the largest gap field", 32, 0xFFFF},
		{"a gap past the end of the area", 224, 48},
	} {
		p, c := testRing(256)
		p.put([]byte("x"), nil)
		binary.LittleEndian.PutUint32(p.data[8:], tc.n)
		binary.LittleEndian.PutUint32(p.data[12:], recData|tc.gap<<16)
		if d, ok := c.next(); ok {
			t.Fatalf("%s: read %d bytes", tc.name, len(d))
		}
		if c.end() != errCorrupt {
			t.Fatalf("%s: not reported as corrupt", tc.name)
		}
	}
	// A pad's word carries no gap.
	p, c := testRing(256)
	p.put(make([]byte, 100), nil)
	p.put(make([]byte, 100), nil) // does not fit before the end: a pad at 128
	drain(t, c)
	p.put(nil, nil)
	binary.LittleEndian.PutUint32(p.data[12:], recData|8<<16) // the record after the pad: gap 8, length 0
	if _, ok := c.next(); !ok || c.end() != nil {
		t.Fatal("a record with a gap in range was refused")
	}
}
