package proto

import (
	"math/rand/v2"
	"testing"
)

// TestBitmapModel checks set, clear and next against a plain array of
// bools, for bitmaps inline (up to 64 bits) and on a slice.
func TestBitmapModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		n := uint32(1 + rng.IntN(300))
		var b bitmap
		b.reset(n)
		model := make([]bool, n)
		for range 200 {
			i := uint32(rng.IntN(int(n)))
			if rng.IntN(2) == 0 {
				if was := b.set(i); was != model[i] {
					t.Fatalf("round %d: set(%d) said %v, model %v", round, i, was, model[i])
				}
				model[i] = true
			} else {
				b.clear(i)
				model[i] = false
			}
			from := uint32(rng.IntN(int(n) + 1))
			want := -1
			for j := from; j < n; j++ {
				if model[j] {
					want = int(j)
					break
				}
			}
			if got := b.next(from); got != want {
				t.Fatalf("round %d (n %d): next(%d) = %d, want %d", round, n, from, got, want)
			}
		}
	}
}
