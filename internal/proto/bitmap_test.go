package proto

import (
	"math/rand/v2"
	"testing"

	"github.com/erpc-go/erpc/internal/wire"
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

// TestSlotOf checks the slot of a request number, masked or divided,
// against the modulo it stands for.
func TestSlotOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for w := 1; w <= 70; w++ {
		var s session
		s.negotiate(&Config{Window: w, MaxMsgSize: 1, MaxPacketSize: 64}, &wire.Connect{Window: 1024, MaxMsgSize: 1, MaxData: 1})
		for range 200 {
			n := rng.Uint64()
			if got := s.slotOf(n); got != int(n%uint64(w)) {
				t.Fatalf("window %d: slotOf(%d) = %d, want %d", w, n, got, n%uint64(w))
			}
		}
	}
}
