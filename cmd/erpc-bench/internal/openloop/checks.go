package openloop

import (
	"math"
	"slices"
)

// adCritical is the Anderson-Darling statistic's 1% critical value for
// the exponential distribution with its mean estimated from the sample
// (Stephens 1974; D'Agostino and Stephens, Goodness-of-Fit Techniques,
// table 4.11, with A² multiplied by 1 + 0.6/n).
const adCritical = 1.959

// adMaxN caps the gaps tested (every k-th one is taken), which keeps a
// high-rate point's test as sensitive as a point of a few thousand
// requests.
const adMaxN = 10000

// zCritical bounds the share of gaps below the resolution: a two-sided
// 0.1% z-test.
const zCritical = 3.29

// iatCheck is the inter-arrival test's verdict on one point.
type iatCheck struct {
	AD    float64 // Anderson-Darling A* of the gaps above the resolution, less it
	N     int     // gaps it tested
	Below float64 // share of gaps shorter than the resolution
	Want  float64 // that share for a Poisson stream of the same rate
	Z     float64 // (below - want) in standard errors
}

func (c iatCheck) ok() bool { return c.N > 0 && c.AD <= adCritical && math.Abs(c.Z) <= zCritical }

// interArrivalCheck tests that the sorted send times (ns) form a Poisson
// stream, seen at resolution res (ns): a sender's timing jitter finer than
// res is not what the test is for. A Poisson stream's gaps are
// exponential, and, the exponential having no memory, the gaps longer than
// res, less res, are exponential with the same mean: those are tested
// with Anderson-Darling. A generator that falls behind and catches up
// sends bunches of short gaps; one with a fixed or regular pace sends too
// few: the share of gaps below res is compared with the exponential's,
// 1 - e^(-res/mean). Jitter finer than res moves gaps across res both
// ways and leaves that share about unchanged. With res = 0 it is the plain
// test of all gaps.
func interArrivalCheck(sends []int64, res float64) iatCheck {
	var c iatCheck
	if len(sends) < 21 {
		return c
	}
	slices.Sort(sends)
	var over []float64
	var sum float64
	nb := 0
	for i := 1; i < len(sends); i++ {
		g := float64(sends[i] - sends[i-1])
		sum += g
		if g > res {
			over = append(over, g-res)
		} else {
			nb++
		}
	}
	n := len(sends) - 1
	mean := sum / float64(n)
	c.Below = float64(nb) / float64(n)
	if res > 0 && mean > 0 {
		c.Want = -math.Expm1(-res / mean)
		if se := math.Sqrt(c.Want * (1 - c.Want) / float64(n)); se > 0 {
			c.Z = (c.Below - c.Want) / se
		}
	}
	if len(over) < 20 {
		// Nearly every gap is below the resolution: only the share can
		// be judged.
		c.N = n
		c.AD = 0
		return c
	}
	if len(over) > adMaxN {
		step := float64(len(over)) / adMaxN
		sub := make([]float64, 0, adMaxN)
		for i := range adMaxN {
			sub = append(sub, over[int(float64(i)*step)])
		}
		over = sub
	}
	c.AD, c.N = andersonDarlingExp(over), len(over)
	return c
}

// andersonDarlingExp returns the modified Anderson-Darling statistic
// A²(1 + 0.6/n) of xs (sorted in place) against the exponential
// distribution whose mean is xs's. A sample from that distribution gives
// more than adCritical once in a hundred.
func andersonDarlingExp(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if mean <= 0 {
		return math.Inf(1)
	}
	floor := mean * 1e-9 // a zero gap: as unlikely as the clock can say
	var sum float64
	for i := range n {
		lo := max(xs[i], floor) / mean
		hi := xs[n-1-i] / mean
		// ln F(x_i) + ln(1 - F(x_{n+1-i})), F(x) = 1 - e^-x
		sum += float64(2*i+1) * (math.Log(-math.Expm1(-lo)) - hi)
	}
	a2 := -float64(n) - sum/float64(n)
	return a2 * (1 + 0.6/float64(n))
}
