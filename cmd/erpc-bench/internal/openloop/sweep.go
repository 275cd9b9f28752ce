package openloop

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
)

// Service-time distributions of mean S (seed 001; ZygOS, NEBULA).
var Dists = []string{"fixed", "exp", "bimodal1", "bimodal2"}

// DrawService draws a service time of distribution dist with mean s.
func DrawService(dist string, s time.Duration, rng *rand.Rand) time.Duration {
	switch dist {
	case "exp":
		return time.Duration(rng.ExpFloat64() * float64(s))
	case "bimodal1": // 90% S/2, 10% 5.5 S
		if rng.Float64() < 0.9 {
			return s / 2
		}
		return s * 11 / 2
	case "bimodal2": // 99.9% S/2, 0.1% 500.5 S
		if rng.Float64() < 0.999 {
			return s / 2
		}
		return s * 1001 / 2
	}
	return s
}

// Point is one measured point of one contestant, as the summary sees it.
type Point struct {
	Offered float64 // requests per second asked for
	QPS     float64 // answered per second
	P99     float64 // ns; +Inf when NACKs and failures reach the 1% tail
	Valid   bool
	Rec     report.Record // the point's row
}

// MaxUnderSLO picks the result line of a sweep: the highest throughput
// among valid points that meet the SLO, going up in offered load and
// stopping at the first valid point that misses it (a lucky point beyond
// a failing one does not count). Invalid points neither pass nor stop.
func MaxUnderSLO(pts []Point, slo float64) (Point, bool) {
	pts = slices.Clone(pts)
	slices.SortStableFunc(pts, func(a, b Point) int {
		switch {
		case a.Offered < b.Offered:
			return -1
		case a.Offered > b.Offered:
			return 1
		}
		return 0
	})
	var best Point
	found := false
	for _, p := range pts {
		if !p.Valid {
			continue
		}
		if !(p.P99 <= slo) {
			break
		}
		if !found || p.QPS > best.QPS {
			best, found = p, true
		}
	}
	return best, found
}

// Valid says whether a point measured what it meant to: the
// generator's lag p99 within 5% of the SLO, its inter-arrival times
// exponential, and the server's emulated service times overrun by no more
// than 5% of the SLO at p99.
func Valid(s *Stats, slo time.Duration) (bool, string) {
	var why []string
	if lag := s.Lag.Quantile(0.99); lag > 0.05*float64(slo) {
		why = append(why, fmt.Sprintf("lag p99 %s > 5%% of the SLO", report.HumanUs(lag/1e3)))
	}
	// The server's side of the same check (sleep workload): its waits
	// must be the service times drawn, or the point measured another
	// distribution (a server process the kernel held up, say).
	if s.Over.N > 0 {
		if over := s.Over.Quantile(0.99); over > 0.05*float64(slo) {
			why = append(why, fmt.Sprintf("service overshoot p99 %s > 5%% of the SLO", report.HumanUs(over/1e3)))
		}
	}
	switch c := s.IAT; {
	case c.N == 0:
		why = append(why, "too few sends to test")
	case !c.ok():
		why = append(why, fmt.Sprintf("inter-arrivals not exponential (A-D %.2f, limit %.2f; %.1f%% of gaps under the resolution, Poisson %.1f%%, z %.1f)",
			c.AD, adCritical, 100*c.Below, 100*c.Want, c.Z))
	}
	if len(why) == 0 {
		return true, ""
	}
	return false, fmt.Sprint(why)
}
