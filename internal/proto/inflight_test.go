package proto

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestInflightListMatchesSlice runs random adds and removals (mostly of
// the oldest record, as replies in order make them) against a plain slice
// and compares the two after every step.
func TestInflightListMatchesSlice(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var l inflightList
		if seed%2 == 0 {
			l.useInline() // as a session's list starts
		}
		var model []inflight
		seq := uint32(0)
		for step := range 2000 {
			switch {
			case len(model) < 64 && (len(model) == 0 || rng.IntN(2) == 0):
				seq++
				r := inflight{seq: seq, slot: uint16(seq % 64)}
				l.add(r)
				model = append(model, r)
			default:
				i := 0
				if rng.IntN(4) == 0 {
					i = rng.IntN(len(model))
				}
				got, want := l.removeAt(i), model[i]
				model = slices.Delete(model, i, i+1)
				if got != want {
					t.Fatalf("seed %d step %d: removeAt(%d) = %+v, want %+v", seed, step, i, got, want)
				}
			}
			if !slices.Equal(l.recs, model) {
				t.Fatalf("seed %d step %d: records %v, want %v", seed, step, l.recs, model)
			}
			if len(model) > 0 && l.find(model[len(model)/2].seq) != len(model)/2 {
				t.Fatalf("seed %d step %d: find lost a record", seed, step)
			}
		}
	}
}

// TestInflightListSteadyStateAllocs: a window of records that slides
// (oldest answered, a new one sent) reuses its array.
func TestInflightListSteadyStateAllocs(t *testing.T) {
	var l inflightList
	seq := uint32(0)
	for range 64 {
		seq++
		l.add(inflight{seq: seq})
	}
	if n := testing.AllocsPerRun(1000, func() {
		l.removeAt(0)
		seq++
		l.add(inflight{seq: seq})
	}); n != 0 {
		t.Fatalf("%v allocations per reply and send", n)
	}
}
