package seal

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReplayEveryPacket: after a run of packets opens in a random order,
// every one of them replayed (in another random order) is dropped and
// counted as a replay.
func TestReplayEveryPacket(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, st := range testSuites {
		s, o := pair(t, st.id, 4, LevelApplication)
		pkts := sealN(s, WindowSize, 32)
		for _, i := range r.Perm(len(pkts)) {
			mustOpen(t, o, pkts[i])
		}
		for _, i := range r.Perm(len(pkts)) {
			mustDrop(t, o, pkts[i], ErrReplay)
		}
		if d := o.Drops(); d.Replay != WindowSize || d.Total() != WindowSize {
			t.Fatalf("%s: %+v", st.name, d)
		}
	}
}

// TestReorderWithinWindow: packets displaced by up to half a window, each
// delivered one to three times, open exactly once each; every extra copy is
// a counted replay.
func TestReorderWithinWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, st := range testSuites {
		s, o := pair(t, st.id, 5, LevelApplication)
		const n = 3 * WindowSize
		pkts := sealN(s, n, 16)
		type arrival struct {
			at  uint64
			idx int
		}
		var order []arrival
		copies := 0
		for i := range pkts {
			for range 1 + r.IntN(3) {
				order = append(order, arrival{uint64(i) + r.Uint64N(WindowSize/2), i})
				copies++
			}
		}
		slices.SortStableFunc(order, func(a, b arrival) int { return int(a.at) - int(b.at) })
		opened := make([]int, n)
		for _, a := range order {
			if _, err := o.Open(nil, pkts[a.idx]); err == nil {
				opened[a.idx]++
			} else if err != ErrReplay {
				t.Fatalf("%s: packet %d: %v", st.name, a.idx, err)
			}
		}
		for i, c := range opened {
			if c != 1 {
				t.Fatalf("%s: packet %d opened %d times", st.name, i, c)
			}
		}
		if d := o.Drops(); d.Replay != uint64(copies-n) || d.Total() != d.Replay {
			t.Fatalf("%s: %d extra copies, drops %+v", st.name, copies-n, d)
		}
	}
}

// TestTooOld: with packet W+10 opened first, 0..10 are below the window
// (dropped, counted) and 11..W+9 still open; the edge is exact.
func TestTooOld(t *testing.T) {
	s, o := pair(t, testSuites[0].id, 6, LevelApplication)
	pkts := sealN(s, WindowSize+11, 8)
	mustOpen(t, o, pkts[WindowSize+10])
	for pn := range 11 {
		mustDrop(t, o, pkts[pn], ErrTooOld)
	}
	for pn := 11; pn < WindowSize+10; pn++ {
		mustOpen(t, o, pkts[pn])
	}
	if d := o.Drops(); d.TooOld != 11 || d.Total() != 11 {
		t.Fatalf("%+v", d)
	}
}

// TestWindowModel drives an Opener with a seeded random mix of genuine
// packets (far out of order, some beyond the window), replays, mutated
// copies and garbage, and checks every outcome against a plain model: a
// genuine packet opens iff it is unopened and within WindowSize of the
// highest opened; nothing else ever opens.
func TestWindowModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, st := range testSuites {
		s, o := pair(t, st.id, 9, LevelApplication)
		pkts := sealN(s, 6*WindowSize, 24)
		seen := map[uint64]bool{}
		var top uint64 // highest opened + 1
		next := 0
		for step := 0; step < 40000; step++ {
			var pkt []byte
			genuine := true
			switch k := r.IntN(10); {
			case k < 5: // the next packets, or one up to 1.5 windows back
				i := next
				if r.IntN(2) == 0 {
					i = max(0, next-r.IntN(3*WindowSize/2))
				}
				if next < len(pkts) && i == next {
					next += 1 + r.IntN(3)
				}
				pkt = pkts[min(i, len(pkts)-1)]
			case k < 8: // a mutated copy
				pkt = bytes.Clone(pkts[r.IntN(max(next, 1))])
				pkt[r.IntN(len(pkt))] ^= byte(1 + r.IntN(255))
				genuine = false
			default: // garbage, sometimes with a valid-looking header
				pkt = make([]byte, r.IntN(80))
				for i := range pkt {
					pkt[i] = byte(r.Uint32())
				}
				if len(pkt) > 2 {
					pkt[0], pkt[1] = Magic, byte(LevelApplication)
				}
				genuine = false
			}
			h, _ := ParseHeader(pkt)
			want := genuine && !seen[h.PN] && (h.PN >= top || top-h.PN <= WindowSize)
			_, err := o.Open(nil, pkt)
			if (err == nil) != want {
				t.Fatalf("%s step %d: pn %d genuine %v seen %v top %d: %v", st.name, step, h.PN, genuine, seen[h.PN], top, err)
			}
			if err == nil {
				seen[h.PN] = true
				top = max(top, h.PN+1)
			}
		}
		d := o.Drops()
		t.Logf("%s: opened %d, drops %+v", st.name, o.Opened(), d)
		if o.Opened() != uint64(len(seen)) || d.TooOld == 0 || d.Replay == 0 || d.Auth == 0 || d.BadHeader == 0 {
			t.Fatalf("%s: opened %d, model %d", st.name, o.Opened(), len(seen))
		}
	}
}
