package meter

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestHistQuantiles checks the histogram's percentiles against a sorted
// reference: each must be within the bucket precision of the exact one.
func TestHistQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dist := range []struct {
		name string
		gen  func() int64
	}{
		{"uniform-small", func() int64 { return r.Int64N(200) }},
		{"lognormal", func() int64 { return int64(math.Exp(r.NormFloat64()*1.5 + 10)) }},
		{"bimodal", func() int64 {
			if r.IntN(100) < 3 {
				return 5_000_000 + r.Int64N(1_000_000)
			}
			return 20_000 + r.Int64N(5_000)
		}},
	} {
		t.Run(dist.name, func(t *testing.T) {
			var h Hist
			vals := make([]int64, 100_000)
			for i := range vals {
				vals[i] = dist.gen()
				h.recordNS(vals[i])
			}
			sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
			for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 0.999, 1} {
				rank := max(int(math.Ceil(q*float64(len(vals)))), 1)
				want := float64(vals[rank-1])
				got := h.Quantile(q)
				if math.Abs(got-want) > want/histSub+1 {
					t.Errorf("q=%v: got %v, want %v (±1/%d)", q, got, want, histSub)
				}
			}
			if h.N != uint64(len(vals)) || h.min != vals[0] || h.Max != vals[len(vals)-1] {
				t.Errorf("n/min/max = %d/%d/%d", h.N, h.min, h.Max)
			}
		})
	}
}

// TestHistIndex checks that every value maps into a bucket whose midpoint
// is within the precision, across the whole int64 range.
func TestHistIndex(t *testing.T) {
	prev := -1
	for v := int64(0); v < 1<<20; v++ {
		i := histIndex(v)
		if i < prev || i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d after %d", v, i, prev)
		}
		prev = i
		if mid := HistValue(i); math.Abs(float64(mid-v)) > float64(v)/histSub+1 {
			t.Fatalf("value %d: bucket %d midpoint %d", v, i, mid)
		}
	}
	for _, v := range []int64{math.MaxInt64, 1 << 62, 1<<40 + 12345} {
		if i := histIndex(v); i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d out of range", v, i)
		}
	}
}

func TestHistMerge(t *testing.T) {
	var a, b, all Hist
	for i := int64(1); i <= 1000; i++ {
		all.recordNS(i * 1000)
		if i%2 == 0 {
			a.recordNS(i * 1000)
		} else {
			b.recordNS(i * 1000)
		}
	}
	a.Merge(&b)
	if a.Counts != all.Counts || a.N != all.N || a.min != all.min || a.Max != all.Max {
		t.Fatal("merged histogram differs from the one that saw every value")
	}
	var empty Hist
	if !math.IsNaN(empty.Quantile(0.5)) {
		t.Fatal("quantile of an empty histogram should be NaN")
	}
}
