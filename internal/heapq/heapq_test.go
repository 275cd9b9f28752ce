package heapq

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHeapSorts(t *testing.T) {
	h := Heap[int]{Less: func(a, b *int) bool { return *a < *b }}
	r := rand.New(rand.NewPCG(1, 2))
	var want []int
	for range 1000 {
		v := r.IntN(100)
		h.Push(v)
		want = append(want, v)
		if r.IntN(3) == 0 {
			slices.Sort(want)
			if got := h.Pop(); got != want[0] {
				t.Fatalf("pop %d, want %d", got, want[0])
			}
			want = want[1:]
		}
	}
	slices.Sort(want)
	for _, w := range want {
		if *h.Peek() != w || h.Pop() != w {
			t.Fatal("heap out of order")
		}
	}
	if h.Len() != 0 {
		t.Fatal("heap not empty")
	}
}
