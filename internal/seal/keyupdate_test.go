package seal

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKeyUpdateBothWays: each direction of a session updates its key every
// batch of packets; packets are delivered displaced by up to 300 (across
// the updates) and some twice. Every packet opens exactly once, under the
// generation that sealed it, and each Opener ends at its Sealer's
// generation.
func TestKeyUpdateBothWays(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	for _, st := range testSuites {
		for dir := range 2 { // client to server, server to client
			s, o := pair(t, st.id, uint64(20+dir), LevelApplication)
			var pkts [][]byte
			gens := []uint64{}
			for batch := range 12 {
				if batch > 0 {
					s.UpdateKey()
				}
				for _, p := range sealN(s, 500+r.IntN(500), 32) {
					pkts = append(pkts, p)
					gens = append(gens, s.Generation())
				}
			}
			type arrival struct{ at, idx int }
			var order []arrival
			for i := range pkts {
				order = append(order, arrival{i + r.IntN(300), i})
				if r.IntN(10) == 0 {
					order = append(order, arrival{i + r.IntN(300), i})
				}
			}
			slices.SortStableFunc(order, func(a, b arrival) int { return a.at - b.at })
			opened := make([]int, len(pkts))
			for _, a := range order {
				if _, err := o.Open(nil, pkts[a.idx]); err == nil {
					opened[a.idx]++
				} else if err != ErrReplay {
					h, _ := ParseHeader(pkts[a.idx])
					t.Fatalf("%s dir %d: packet %d (gen %d, phase %v), opener gen %d: %v",
						st.name, dir, a.idx, gens[a.idx], h.KeyPhase, o.Generation(), err)
				}
			}
			for i, c := range opened {
				if c != 1 {
					t.Fatalf("%s: packet %d opened %d times", st.name, i, c)
				}
			}
			if o.Generation() != s.Generation() || o.Drops().Total() != o.Drops().Replay {
				t.Fatalf("%s: opener gen %d, sealer gen %d, drops %+v", st.name, o.Generation(), s.Generation(), o.Drops())
			}
		}
	}
}

// TestOldKeyDiscarded: a straggler of the previous generation opens while
// the previous keys are kept, and once the window has moved a full window
// past the new generation's first packet they are discarded and a
// straggler is dropped as OldKey.
func TestOldKeyDiscarded(t *testing.T) {
	for _, st := range testSuites {
		s, o := pair(t, st.id, 30, LevelApplication)
		gen0 := sealN(s, 100, 16) // pn 0..99
		s.UpdateKey()
		gen1 := sealN(s, WindowSize+200, 16) // pn 100..
		for i, p := range gen0 {
			if i != 50 && i != 60 {
				mustOpen(t, o, p)
			}
		}
		for _, p := range gen1[:WindowSize-200] {
			mustOpen(t, o, p)
		}
		if !o.havePrev || o.Generation() != 1 {
			t.Fatal("previous keys discarded too early")
		}
		mustOpen(t, o, gen0[60]) // reordered across the update, still in the window
		for _, p := range gen1[WindowSize-200 : WindowSize-1] {
			mustOpen(t, o, p)
		}
		if !o.havePrev { // the window's low edge is 99: packet 99 may come
			t.Fatal("previous keys discarded before the window passed the update")
		}
		for _, p := range gen1[WindowSize-1:] {
			mustOpen(t, o, p)
		}
		if o.havePrev {
			t.Fatalf("previous keys kept with the window at %d, first new packet 100", o.win.lowEdge())
		}
		mustDrop(t, o, gen0[50], ErrOldKey)
		if d := o.Drops(); d.OldKey != 1 || d.Total() != 1 {
			t.Fatalf("%+v", d)
		}
	}
}

// TestOldKeyTwoBack: a straggler from two generations back carries the
// current key phase; it is recognised by its number (below the previous
// generation's packets) and dropped as OldKey, not tried as current.
func TestOldKeyTwoBack(t *testing.T) {
	s, o := pair(t, testSuites[0].id, 31, LevelApplication)
	gen0 := sealN(s, 10, 16)
	s.UpdateKey()
	gen1 := sealN(s, 10, 16)
	s.UpdateKey()
	gen2 := sealN(s, 10, 16)
	for _, p := range slices.Concat(gen0[:9], gen1, gen2) {
		mustOpen(t, o, p)
	}
	mustDrop(t, o, gen0[9], ErrOldKey)
	if o.Generation() != 2 || o.Drops().OldKey != 1 {
		t.Fatalf("gen %d, drops %+v", o.Generation(), o.Drops())
	}
}

// TestForgedPhaseDoesNotUpdate: a packet with its key phase flipped, or a
// forged next-phase packet far ahead, fails authentication and moves
// neither the key generation nor the window.
func TestForgedPhaseDoesNotUpdate(t *testing.T) {
	s, o := pair(t, testSuites[1].id, 32, LevelApplication)
	pkts := sealN(s, 3, 64)
	mustOpen(t, o, pkts[0])
	bad := bytes.Clone(pkts[1])
	bad[1] ^= flagKeyPhase
	mustDrop(t, o, bad, ErrAuth)
	bad = bytes.Clone(pkts[2])
	bad[1] ^= flagKeyPhase
	bad[15] = 0x10 // a packet number far ahead
	mustDrop(t, o, bad, ErrAuth)
	if o.Generation() != 0 || o.win.top != 1 {
		t.Fatalf("forgery moved state: gen %d top %d", o.Generation(), o.win.top)
	}
	mustOpen(t, o, pkts[1])
	mustOpen(t, o, pkts[2])
}

// TestUsageLimit: UpdateDue turns on at the suite's update point, Seal
// updates by itself at the hard limit so no key seals more packets than it,
// and the Opener follows every generation. The limits are shrunk so the
// test runs in a moment; the real ones are checked against RFC 9001.
func TestUsageLimit(t *testing.T) {
	if aesGCMLimit != 1<<23 || aesGCMUpdateDue != 1<<22 {
		t.Fatal("AES-GCM limits are not RFC 9001's 2^23 (update due at half)")
	}
	s, o := pair(t, testSuites[0].id, 33, LevelApplication)
	s.suite.updateDue, s.suite.hardLimit = 5, 8
	run, phase := 0, false
	for i := range 100 {
		if due := s.underKey >= 5; s.UpdateDue() != due {
			t.Fatalf("packet %d: UpdateDue %v", i, s.UpdateDue())
		}
		if i%30 == 29 { // the endpoint acts on UpdateDue now and then
			s.UpdateKey()
		}
		pkt := s.Seal(nil, 1, payloadFor(uint64(i), 8))
		h, _ := ParseHeader(pkt)
		if h.KeyPhase != phase {
			phase, run = h.KeyPhase, 0
		}
		if run++; run > 8 {
			t.Fatalf("packet %d: %d packets under one key", i, run)
		}
		mustOpen(t, o, pkt)
	}
	if o.Generation() != s.Generation() || s.Generation() < 12 {
		t.Fatalf("generations: sealer %d opener %d", s.Generation(), o.Generation())
	}
}

// TestPacketNumberExhausted: past MaxPacketNumber Seal returns dst
// unchanged rather than reuse or overflow a packet number.
func TestPacketNumberExhausted(t *testing.T) {
	s, o := pair(t, testSuites[0].id, 34, LevelApplication)
	s.pn = MaxPacketNumber
	pkt := s.Seal(nil, 1, payloadFor(MaxPacketNumber, 8))
	mustOpen(t, o, pkt)
	if out := s.Seal([]byte("d"), 1, []byte("x")); string(out) != "d" {
		t.Fatalf("sealed past MaxPacketNumber: %x", out)
	}
}

// TestStragglerAfterTwoUpdates: a packet of the previous generation
// numbered below every packet of it opened so far still opens after a
// second update, while the previous keys are kept.
func TestStragglerAfterTwoUpdates(t *testing.T) {
	s, o := pair(t, testSuites[0].id, 35, LevelApplication)
	gen0 := sealN(s, 10, 16) // pn 0..9
	s.UpdateKey()
	gen1 := sealN(s, 10, 16) // pn 10..19
	s.UpdateKey()
	gen2 := sealN(s, 10, 16) // pn 20..29
	for _, p := range slices.Concat(gen0, gen1[5:6], gen2[:1]) {
		mustOpen(t, o, p)
	}
	for _, i := range []int{1, 0, 9, 2} {
		mustOpen(t, o, gen1[i])
	}
	if o.Generation() != 2 || o.Drops().Total() != 0 {
		t.Fatalf("gen %d, drops %+v", o.Generation(), o.Drops())
	}
}
