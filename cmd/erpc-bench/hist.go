package main

import (
	"math"
	"math/bits"
	"time"
)

// hist is a log-linear latency histogram in the style of HdrHistogram:
// values below 2*histSub nanoseconds have a bucket each, and every power of
// two above is split into histSub linear buckets, so a recorded value is
// known to within 1/histSub of itself (1/(2*histSub) when reported as the
// bucket's midpoint). It records without allocating and merges by adding,
// which lets each measuring goroutine keep its own.
type hist struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      float64 // nanoseconds
	min, max int64
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

// histValue is the midpoint of bucket i.
func histValue(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	j := i - 2*histSub
	shift := j/histSub + 1
	low := int64(j%histSub+histSub) << shift
	return low + (int64(1)<<shift)/2
}

func (h *hist) recordNS(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

func (h *hist) record(d time.Duration) { h.recordNS(int64(d)) }

func (h *hist) merge(o *hist) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// quantile returns the value at quantile q (0..1) in nanoseconds: the
// smallest recorded value v such that at least q of all values are <= v,
// to within the bucket precision. NaN when empty.
func (h *hist) quantile(q float64) float64 {
	if h.n == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			v := histValue(i)
			return float64(min(max(v, h.min), h.max))
		}
	}
	return float64(h.max)
}

func (h *hist) mean() float64 {
	if h.n == 0 {
		return math.NaN()
	}
	return h.sum / float64(h.n)
}

// mean is the arithmetic mean of v, NaN when empty.
func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
