package proto

import (
	"math/rand/v2"
	"testing"
)

// TestTimerHeapModel drives the timer heap with random pushes, moves (earlier
// and later), removals and pops, and checks it against a plain list after
// every step: the top is the earliest deadline, every session in it knows
// its index, and a session out of it knows it is out.
func TestTimerHeapModel(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var h timerHeap
		ss := make([]*session, 64)
		for i := range ss {
			ss[i] = &session{num: uint32(i), deadline: Never}
		}
		pops := 0
		for step := range 2000 {
			s := ss[rng.IntN(len(ss))]
			switch op := rng.IntN(4); {
			case !h.in(s) && op < 3:
				s.deadline = Time(rng.IntN(1000))
				h.push(s)
			case h.in(s) && op < 2:
				s.deadline = Time(rng.IntN(1000))
				h.fix(s)
			case h.in(s) && op == 2:
				h.remove(s)
			case h.len() > 0:
				want := Never
				for _, x := range ss {
					if h.in(x) {
						want = min(want, x.deadline)
					}
				}
				if got := h.pop(); got.deadline != want {
					t.Fatalf("seed %d step %d: popped deadline %d, earliest %d", seed, step, got.deadline, want)
				}
				pops++
			}
			checkTimerHeap(t, &h, ss)
		}
		if pops == 0 {
			t.Fatalf("seed %d: no pop checked", seed)
		}
	}
}

func checkTimerHeap(t *testing.T, h *timerHeap, ss []*session) {
	t.Helper()
	in := 0
	for _, s := range ss {
		if !h.in(s) {
			continue
		}
		in++
		if i := h.index(s); i >= h.len() || h.h[i].s != s || h.h[i].num != s.num || h.h[i].at != s.deadline {
			t.Fatalf("session at index %d: entry does not match", i)
		}
	}
	if in != h.len() {
		t.Fatalf("%d sessions think they are in a heap of %d", in, h.len())
	}
	for i := 1; i < h.len(); i++ {
		if h.h[i].at < h.h[(i-1)/2].at {
			t.Fatalf("heap order broken at %d", i)
		}
	}
}
