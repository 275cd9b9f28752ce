package fleet

import (
	"math"
	"slices"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
)

// The rows are computed from the calls' log: every call planned, when
// (its planned send, from which its latency counts: open loop), which
// replica answered, how long it took, or that it failed. Windows select
// calls by planned send time.

// call is one logged call.
type call struct {
	at     time.Time     // planned send
	lat    time.Duration // -1: failed
	srv    int           // replica index, -1 unknown
	client int           // client index across the load processes
}

func (c call) failed() bool { return c.lat < 0 }

// callsOf turns a load process's log into calls; clientBase offsets its
// client indexes.
func callsOf(l callLog, clientBase int) []call {
	start := time.Unix(0, l.StartNS)
	out := make([]call, 0, len(l.Calls))
	for _, r := range l.Calls {
		lat := time.Duration(r[1]) * time.Microsecond
		if r[1] < 0 {
			lat = -1
		}
		out = append(out, call{at: start.Add(time.Duration(r[0]) * time.Microsecond), lat: lat, srv: int(r[2]), client: clientBase + int(r[3])})
	}
	return out
}

// window is the calls planned in [from, to).
func window(calls []call, from, to time.Time) []call {
	var out []call
	for _, c := range calls {
		if !c.at.Before(from) && c.at.Before(to) {
			out = append(out, c)
		}
	}
	return out
}

// summary is a window's counts and latency quantiles (of the calls that
// completed; failed ones are counted apart).
type summary struct {
	calls, failed int
	lats          []time.Duration // sorted
}

func summarize(calls []call) summary {
	s := summary{calls: len(calls)}
	for _, c := range calls {
		if c.failed() {
			s.failed++
		} else {
			s.lats = append(s.lats, c.lat)
		}
	}
	slices.Sort(s.lats)
	return s
}

// quantile is the latency at q among completed calls, NaN with none.
func (s summary) quantile(q float64) float64 {
	if len(s.lats) == 0 {
		return math.NaN()
	}
	i := max(int(math.Ceil(q*float64(len(s.lats))))-1, 0)
	return float64(s.lats[i])
}

// us is a quantile in µs, rounded for a row (0 when unknown).
func us(ns float64) float64 { return report.Round3(ns / 1e3) }

// shares is each replica's fraction of the completed calls (n replicas).
func shares(calls []call, n int) []float64 {
	out := make([]float64, n)
	total := 0
	for _, c := range calls {
		if !c.failed() && c.srv >= 0 && c.srv < n {
			out[c.srv]++
			total++
		}
	}
	for i := range out {
		if total > 0 {
			out[i] = report.Round3(out[i] / float64(total))
		}
	}
	return out
}

// recoveryStep is the resolution of recovery times.
const recoveryStep = 50 * time.Millisecond

// recovery is how long after t0 the latency came back: the first r (in
// recoveryStep steps) such that the calls planned in [t0+r, end) have a
// p99 within limit, failed calls counting as infinitely slow. -1: never.
func recovery(calls []call, t0, end time.Time, limit float64) time.Duration {
	for r := time.Duration(0); t0.Add(r).Before(end.Add(-time.Second)); r += recoveryStep {
		w := window(calls, t0.Add(r), end)
		if len(w) == 0 {
			break
		}
		if p99Inf(w) <= limit {
			return r
		}
	}
	return -1
}

// p99Inf is the p99 of calls with failures counting as infinite.
func p99Inf(calls []call) float64 {
	s := summarize(calls)
	rank := max(int(math.Ceil(0.99*float64(s.calls))), 1)
	if rank > len(s.lats) {
		return math.Inf(1)
	}
	return float64(s.lats[rank-1])
}

// firstServed is the planned send time of the first call after t0 that
// replica srv answered, and whether there was one.
func firstServed(calls []call, srv int, t0 time.Time) (time.Time, bool) {
	var first time.Time
	for _, c := range calls {
		if c.srv == srv && !c.failed() && !c.at.Before(t0) && (first.IsZero() || c.at.Before(first)) {
			first = c.at
		}
	}
	return first, !first.IsZero()
}

// lastServed is the planned send time of the last call replica srv
// answered.
func lastServed(calls []call, srv int) time.Time {
	var last time.Time
	for _, c := range calls {
		if c.srv == srv && !c.failed() && c.at.After(last) {
			last = c.at
		}
	}
	return last
}

// ms is a duration in milliseconds for a row.
func ms(d time.Duration) float64 { return report.Round3(float64(d) / 1e6) }
