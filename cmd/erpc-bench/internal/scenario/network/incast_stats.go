//go:build linux

package network

import (
	"math"
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/testbed"
)

// incastBurst is what one incast measured.
type incastBurst struct {
	fcts     []time.Duration // per sender
	dur      time.Duration   // start to the last answer
	calls    int
	failed   int
	firstErr error
	qbytes   uint64 // bytes the bottleneck sent
	drops    uint64
	maxQueue uint32
	rexmit   uint64
	jains    []float64   // per 10 ms window
	trace    [][]float64 // per sender, Mbit/s per 10 ms window
}

// incastAcc accumulates a row's incasts.
type incastAcc struct {
	fct      meter.Hist
	n        int
	calls    int
	failed   int
	firstErr error
	qbytes   uint64
	secs     float64
	drops    uint64
	rexmit   uint64
	maxQueue uint32
	jains    []float64 // every window of every incast
	jainMin  float64   // the worst incast's mean
	utilMin  float64
	last     *incastBurst
}

func (a *incastAcc) Add(bu *incastBurst, rate uint64) {
	for _, f := range bu.fcts {
		a.fct.Record(f)
	}
	a.n++
	a.calls += bu.calls
	a.failed += bu.failed
	if a.firstErr == nil {
		a.firstErr = bu.firstErr
	}
	a.qbytes += bu.qbytes
	a.secs += bu.dur.Seconds()
	a.drops += bu.drops
	a.rexmit += bu.rexmit
	a.maxQueue = max(a.maxQueue, bu.maxQueue)
	a.jains = append(a.jains, bu.jains...)
	if j := meter.Mean(bu.jains); a.n == 1 || j < a.jainMin {
		a.jainMin = j
	}
	if u := utilization(bu.qbytes, rate, bu.dur.Seconds()); a.n == 1 || u < a.utilMin {
		a.utilMin = u
	}
	a.last = bu
}

func utilization(bytes, rate uint64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) * 8 / (float64(rate) * secs)
}

// jain is Jain's fairness index of x: (sum x)^2 / (n sum x^2).
func jain(x []float64) float64 {
	var s, s2 float64
	for _, v := range x {
		s += v
		s2 += v * v
	}
	if s2 == 0 {
		return math.NaN()
	}
	return s * s / (float64(len(x)) * s2)
}

// windows turns the receiver's 1 ms bins into per-sender bytes in
// incastWindow windows from t0 (a bin goes to the window holding its
// middle), nwin windows.
func windows(nb testbed.Bins, t0 time.Time, addrs []netip.Addr, nwin int) [][]float64 {
	out := make([][]float64, len(addrs))
	for i, a := range addrs {
		out[i] = make([]float64, nwin)
		for j, c := range nb.By[a.String()] {
			if c == 0 {
				continue
			}
			mid := nb.EpochNS + int64(j)*nb.BinNS + nb.BinNS/2 - t0.UnixNano()
			if mid < 0 {
				continue
			}
			if w := int(mid / int64(incastWindow)); w < nwin {
				out[i][w] += float64(c)
			}
		}
	}
	return out
}

// fairness returns Jain's index per window over the senders that were
// still sending through the whole window (fct beyond its end), for the
// windows with at least two of them and some bytes.
func fairness(bytes [][]float64, fcts []time.Duration) []float64 {
	var out []float64
	if len(bytes) == 0 {
		return nil
	}
	for w := range bytes[0] {
		end := time.Duration(w+1) * incastWindow
		var x []float64
		for i := range bytes {
			if fcts[i] >= end {
				x = append(x, bytes[i][w])
			}
		}
		if len(x) < 2 {
			continue
		}
		if j := jain(x); !math.IsNaN(j) {
			out = append(out, j)
		}
	}
	return out
}
