package meter

import (
	"math"
	"math/bits"
	"time"
)

// Hist is a log-linear latency histogram in the style of HdrHistogram:
// values below 2*histSub nanoseconds have a bucket each, and every power of
// two above is split into histSub linear buckets, so a recorded value is
// known to within 1/histSub of itself (1/(2*histSub) when reported as the
// bucket's midpoint). It records without allocating and merges by adding,
// which lets each measuring goroutine keep its own.
type Hist struct {
	Counts   [histBuckets]uint64
	N        uint64
	sum      float64 // nanoseconds
	min, Max int64
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits // linear buckets per power of two
	histBuckets = 2*histSub + (63-histSubBits)*histSub
)

// histIndex maps v >= 0 to its bucket.
func histIndex(v int64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - histSubBits - 1 // >= 1
	return 2*histSub + (shift-1)*histSub + int(uint64(v)>>shift) - histSub
}

// HistValue is the midpoint of bucket i.
func HistValue(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	j := i - 2*histSub
	shift := j/histSub + 1
	low := int64(j%histSub+histSub) << shift
	return low + (int64(1)<<shift)/2
}

func (h *Hist) recordNS(v int64) {
	if v < 0 {
		v = 0
	}
	h.Counts[histIndex(v)]++
	if h.N == 0 || v < h.min {
		h.min = v
	}
	if v > h.Max {
		h.Max = v
	}
	h.N++
	h.sum += float64(v)
}

// Record adds a latency.
func (h *Hist) Record(d time.Duration) { h.recordNS(int64(d)) }

// Merge adds o's values.
func (h *Hist) Merge(o *Hist) {
	if o.N == 0 {
		return
	}
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
	if h.N == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.Max > h.Max {
		h.Max = o.Max
	}
	h.N += o.N
	h.sum += o.sum
}

// Quantile returns the value at quantile q (0..1) in nanoseconds: the
// smallest recorded value v such that at least q of all values are <= v,
// to within the bucket precision. NaN when empty.
func (h *Hist) Quantile(q float64) float64 {
	if h.N == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(h.N)))
	rank = max(rank, 1)
	var cum uint64
	for i, c := range h.Counts {
		cum += c
		if cum >= rank {
			v := HistValue(i)
			return float64(min(max(v, h.min), h.Max))
		}
	}
	return float64(h.Max)
}

// Mean is the mean in nanoseconds, NaN when empty.
func (h *Hist) Mean() float64 {
	if h.N == 0 {
		return math.NaN()
	}
	return h.sum / float64(h.N)
}

// Mean is the arithmetic mean of v, NaN when empty.
func Mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
