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
)

// testRing makes a producer and a consumer over a Go-allocated area, so
// the race detector sees the ring's accesses.
func testRing(size int) (*producer, *consumer) {
	var tail, head atomic.Uint64
	data := make([]byte, size)
	p := newProducer(&tail, &head, data)
	c := newConsumer(&tail, &head, data)
	return &p, &c
}

func drain(t *testing.T, c *consumer) [][]byte {
	t.Helper()
	var got [][]byte
	c.begin()
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
	if c.pending() {
		t.Fatal("records visible before publish")
	}
	p.publish()
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
	if p.maxRecord() != 512-recHeader {
		t.Fatalf("maxRecord %d", p.maxRecord())
	}
	if p.put(make([]byte, p.maxRecord()+1), nil) {
		t.Fatal("put a record over maxRecord")
	}
	n := 0
	for p.put(make([]byte, 100), nil) { // 112 bytes each
		n++
	}
	if n != 1024/112 {
		t.Fatalf("%d records of 112 bytes fit in 1024", n)
	}
	p.publish()
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
		p.publish()
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
	p.publish()
	binary.LittleEndian.PutUint32(p.data[4:], 77) // unknown kind
	c.begin()
	if _, ok := c.next(); ok {
		t.Fatal("read a corrupt record")
	}
	if c.end() != errCorrupt {
		t.Fatal("corrupt record not reported")
	}
	p2, c2 := testRing(256)
	p2.tail.Store(1 << 20) // a tail beyond the ring
	c2.begin()
	if _, ok := c2.next(); ok || c2.end() != errCorrupt {
		t.Fatal("impossible tail not reported")
	}
}

// TestRingConcurrent runs a producer and a consumer goroutine over a small
// ring and checks every record's checksum and order.
func TestRingConcurrent(t *testing.T) {
	p, c := testRing(4096)
	const records = 20000
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(2, 2))
		buf := make([]byte, 1100)
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
				p.publish()
				runtime.Gosched()
			}
			i++
			if r.IntN(4) == 0 {
				p.publish()
			}
		}
		p.publish()
	})
	next := 0
	for next < records {
		if !c.pending() {
			runtime.Gosched()
			continue
		}
		c.begin()
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
