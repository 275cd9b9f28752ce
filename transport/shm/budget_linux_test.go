//go:build linux

package shm

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// TestHostileEmptyRecordsBudget: a peer fills its ring with records that
// carry (almost) nothing: zero-length ones, or a seeded mix of zero- and
// one-to-three-byte ones. Every record costs the listener a call of the
// engine, so every record counts against the per-turn budget: one Receive
// takes at most receiveRecords records and receiveBudget bytes of ring
// from that peer (a 16-byte header each at least), and serves an honest
// connection in the same call. Nothing is lost: later turns take the rest.
func TestHostileEmptyRecordsBudget(t *testing.T) {
	for _, mix := range []string{"empty", "tiny"} {
		t.Run(mix, func(t *testing.T) {
			tr, path := hostileListener(t, Options{})
			honest, err := Listen("", Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer honest.Close()
			to, err := honest.Resolve(path)
			if err != nil {
				t.Fatal(err)
			}
			// A ring four times the byte budget: a turn that took it
			// all would take 4 x receiveBudget bytes.
			p, st, err := rawDial(path, 4*receiveBudget, rawOpts{bell: -1, seals: sealsNeeded})
			if p == nil {
				t.Fatalf("hostile handshake: %s %v", st, err)
			}
			defer func() { unix.Close(p.sock); unix.Munmap(p.mem) }()
			r := rand.New(rand.NewPCG(8, 27))
			filled := 0
			for {
				n := 0
				if mix == "tiny" && r.IntN(2) == 0 {
					n = 1 + r.IntN(3)
				}
				if !p.out.put(make([]byte, n), nil) {
					break
				}
				filled++
			}
			if err := honest.Send([]transport.Message{{To: to, Head: []byte("honest")}}); err != nil {
				t.Fatal(err)
			}
			head := atomicU64(p.peerMem, hdrHead) // what the listener handed back
			var consumed uint64
			got, turns, honestTurn := 0, 0, 0
			for got < filled && turns < 10*filled {
				turns++
				hostileRecords := 0
				tr.Receive(func(from netip.AddrPort, data []byte) {
					if from == honest.LocalAddr() {
						honestTurn = turns
						return
					}
					hostileRecords++
				})
				took := head.Load() - consumed
				consumed += took
				got += hostileRecords
				if hostileRecords > receiveRecords || took > receiveBudget {
					t.Fatalf("turn %d took %d records, %d bytes of ring from one peer (budget: %d records, %d bytes)",
						turns, hostileRecords, took, receiveRecords, receiveBudget)
				}
			}
			if honestTurn != 1 {
				t.Fatalf("the honest peer's datagram came in turn %d, want 1", honestTurn)
			}
			if got != filled {
				t.Fatalf("received %d of %d records", got, filled)
			}
			t.Logf("%d records (%d bytes of ring) in %d turns", filled, consumed, turns)
		})
	}
}

// TestHostileRecordLongerThanMaxDatagram: a peer (which chooses the ring
// size, up to 1 GiB) publishes one record as large as its ring, or just
// larger than the largest datagram. The consumer once checked only that a
// record fits in the ring, so one Receive took the whole ring and handed
// the engine a datagram of megabytes. A record longer than maxDatagram is
// corruption: nothing reaches the engine, nothing of the ring is taken,
// and the connection is dropped and counted in Stats.Corrupt.
func TestHostileRecordLongerThanMaxDatagram(t *testing.T) {
	for _, length := range []int{64<<20 - recHeader, maxDatagram + 1} {
		tr, path := hostileListener(t, Options{})
		const ring = 64 << 20
		p, st, err := rawDial(path, ring, rawOpts{bell: -1, seals: sealsNeeded})
		if p == nil {
			t.Fatalf("hostile handshake: %s %v", st, err)
		}
		// One record at offset 0: header, length, kind, stamp last. The
		// bytes stay zero pages.
		data := p.mem[pageSize : pageSize+ring]
		binary.LittleEndian.PutUint32(data[8:], uint32(length))
		binary.LittleEndian.PutUint32(data[12:], recData)
		stampAt(data, 0).Store(1)

		head := atomicU64(p.peerMem, hdrHead)
		var largest int
		for turn := 1; turn <= 10 && largest == 0; turn++ {
			tr.Receive(func(from netip.AddrPort, d []byte) { largest = max(largest, len(d)) })
			if took := head.Load(); took > receiveBudget {
				t.Fatalf("turn %d took %d bytes of ring from one peer (budget %d), handing the engine a %d-byte datagram (MaxDatagram %d)",
					turn, took, receiveBudget, largest, tr.MaxDatagram())
			}
		}
		if largest > tr.MaxDatagram() {
			t.Fatalf("a %d-byte datagram passed to the engine (MaxDatagram %d)", largest, tr.MaxDatagram())
		}
		if c := tr.Stats().Corrupt; c != 1 {
			t.Fatalf("a %d-byte record: Stats.Corrupt %d, want 1", length, c)
		}
		if !p.waitEOF(5 * time.Second) {
			t.Fatalf("a %d-byte record: the connection was not dropped", length)
		}
		unix.Close(p.sock)
		unix.Munmap(p.mem)
	}
}

// TestRecordBudgetCheckedBeforeTaking: records of seeded random sizes up
// to the largest datagram. One Receive takes records only while they fit
// in the turn's byte budget (the first one of a turn whatever its size), so
// a turn never takes more than receiveBudget bytes of ring unless it took
// one record; every record arrives, in order.
func TestRecordBudgetCheckedBeforeTaking(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	const ring = 16 << 20
	p, st, err := rawDial(path, ring, rawOpts{bell: -1, seals: sealsNeeded})
	if p == nil {
		t.Fatalf("handshake: %s %v", st, err)
	}
	defer func() { unix.Close(p.sock); unix.Munmap(p.mem) }()
	r := rand.New(rand.NewPCG(1, 27))
	var sizes []int
	for {
		n := r.IntN(maxDatagram + 1)
		if r.IntN(4) == 0 {
			n = maxDatagram - r.IntN(64)
		}
		b := make([]byte, n)
		if n >= 4 {
			binary.LittleEndian.PutUint32(b, uint32(len(sizes)))
		}
		if !p.out.put(b, nil) {
			break
		}
		sizes = append(sizes, n)
	}
	head := atomicU64(p.peerMem, hdrHead)
	var consumed uint64
	got, over := 0, 0
	for turn := 1; got < len(sizes) && turn <= 10*len(sizes); turn++ {
		records := 0
		tr.Receive(func(_ netip.AddrPort, d []byte) {
			if len(d) != sizes[got] || (len(d) >= 4 && binary.LittleEndian.Uint32(d) != uint32(got)) {
				t.Fatalf("record %d: %d bytes, want %d", got, len(d), sizes[got])
			}
			got++
			records++
		})
		took := head.Load() - consumed
		consumed += took
		if took > receiveBudget {
			if records != 1 {
				t.Fatalf("turn %d took %d records, %d bytes of ring (budget %d bytes)", turn, records, took, receiveBudget)
			}
			over++
		}
	}
	if got != len(sizes) {
		t.Fatalf("received %d of %d records", got, len(sizes))
	}
	if over == 0 {
		t.Fatal("no turn met a record larger than the budget: the test checks nothing of the first-record rule")
	}
	t.Logf("%d records, %d turns took one record larger than the budget", len(sizes), over)
}
