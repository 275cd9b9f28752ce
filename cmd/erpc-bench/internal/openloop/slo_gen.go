package openloop

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
)

// The slo scenario's open-loop load generator. Several lanes (one per
// client endpoint, each its own goroutine) each send a Poisson stream of
// rate/lanes requests per second (together a Poisson stream of rate): the
// k-th request of a lane is planned at the sum of k draws from the
// exponential distribution, and sent at that time whatever happened to
// the earlier ones, so a slow server cannot slow the generator down and
// hide its own queue (coordinated omission). Latency is measured from the
// planned send time; the generator's lag (actual minus planned send) is
// recorded, and the actual send times are checked against the
// exponential distribution (Anderson-Darling): a point where the generator
// could not keep up is marked invalid rather than reported as the
// server's.

// Target is what the generator drives: one system's client.
type Target interface {
	// send issues c on lane's endpoint. The target calls c.finish exactly
	// once, from any goroutine; ctx ends when the generator stops waiting.
	Send(ctx context.Context, lane int, c *Call)
}

// Call is one request. The generator fills the plan; the target owns
// the buffers (a call object is reused only after finish).
type Call struct {
	lane     *sloLane
	planned  time.Time
	measured bool          // planned inside the measured window
	Sess     int           // which of the lane's sessions to send on (uniform)
	Svc      time.Duration // service time to emulate (sleep workload)
	Get      bool          // kv: GET, else SET
	Key      int           // kv: key index
	Vlen     int           // kv: SET value length

	Req, Resp []byte              // the target's
	Fn        func([]byte, error) // the target's callback, bound once
}

// Finish records the call's outcome: err nil for a response, a NACK
// (nack true), or another failure; served is the service time the server
// measured (0 if unknown).
func (c *Call) Finish(err error, nack bool, served time.Duration) {
	l := c.lane
	g := l.g
	if err == nil {
		// Throughput: answers received inside the window, whenever planned.
		if now := time.Now(); !now.Before(g.from) && now.Before(g.end) {
			l.mu.Lock()
			l.answered++
			l.mu.Unlock()
		}
	}
	if c.measured {
		l.mu.Lock()
		if !g.closed.Load() {
			switch {
			case err == nil:
				l.lat.Record(time.Since(c.planned))
				l.ok++
				if served > 0 {
					l.served.Record(served)
					l.over.Record(served - c.Svc)
				}
			case nack:
				l.nacks++
			default:
				l.errs++
				if l.firstErr == nil {
					l.firstErr = err
				}
			}
			// Under the lock: once every lane is closed, what is still
			// pending was not recorded, and is lost.
			g.measuredPending.Add(-1)
		}
		l.mu.Unlock()
	}
	l.put(c)
	g.pending.Add(-1)
}

// Plan is one point's load.
type Plan struct {
	Rate          float64 // requests per second, all lanes together
	Lanes         int
	Warmup, Dur   time.Duration
	Drain         time.Duration // how long to wait for calls in flight after the last send
	Seed          uint64
	Sessions      int                                // per lane: c.sess is drawn from [0, sessions)
	NewDraw       func(rng *rand.Rand) func(c *Call) // per lane: fills in what to ask for
	Resolution    time.Duration                      // of the inter-arrival test (interArrivalCheck)
	noPreciseWait bool                               // tests: plain time.Sleep
}

// Stats is what a point measured: its calls planned inside the
// measured window.
type Stats struct {
	Rate, Secs            float64
	answered              int64      // answers (not NACKs) received in the window
	Planned               int64      // calls planned in the window
	Ok, Nacks, Errs, Lost int64      // lost: no answer within the drain
	Lat                   meter.Hist // latency of ok calls, from their planned send
	Lag                   meter.Hist // actual minus planned send
	Served, Over          meter.Hist // server-measured service time, and minus the requested one
	Iat                   iatCheck   // the actual send times
	IatPlanned            iatCheck   // the same test on the planned times
	FirstErr              error
}

type sloGen struct {
	pending, measuredPending atomic.Int64
	closed                   atomic.Bool // late answers are ignored
	lanes                    []*sloLane
	from, end                time.Time // the measured window
}

type sloLane struct {
	g  *sloGen
	id int

	mu       sync.Mutex
	lat      meter.Hist
	served   meter.Hist
	over     meter.Hist
	ok       int64
	nacks    int64
	errs     int64
	answered int64
	firstErr error
	free     []*Call

	// The lane goroutine's own.
	lag     meter.Hist
	sends   []int64 // actual send times of measured calls, ns since the start
	planned []int64 // and their planned times
}

func (l *sloLane) get() *Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.free); n > 0 {
		c := l.free[n-1]
		l.free = l.free[:n-1]
		return c
	}
	return &Call{lane: l}
}

func (l *sloLane) put(c *Call) {
	l.mu.Lock()
	l.free = append(l.free, c)
	l.mu.Unlock()
}

// Run drives t with p and returns what it measured.
func Run(t Target, p Plan) Stats {
	start := time.Now().Add(time.Millisecond)
	from := start.Add(p.Warmup)
	end := from.Add(p.Dur)
	g := &sloGen{from: from, end: end}
	for i := range p.Lanes {
		g.lanes = append(g.lanes, &sloLane{g: g, id: i})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mean := float64(p.Lanes) / p.Rate * 1e9 // ns between a lane's requests
	var wg sync.WaitGroup
	for _, l := range g.lanes {
		wg.Go(func() {
			var clk laneClock
			if !p.noPreciseWait {
				clk.sl, _ = NewSleeper()
			}
			if clk.sl != nil {
				defer clk.sl.Close()
			}
			rng := rand.New(rand.NewPCG(p.Seed, uint64(l.id)+1))
			draw := p.NewDraw(rng)
			at := start
			for {
				at = at.Add(expGap(rng, mean))
				if !at.Before(end) {
					return
				}
				clk.Until(at)
				now := time.Now()
				c := l.get()
				c.planned, c.measured = at, !at.Before(from)
				c.Sess = rng.IntN(max(p.Sessions, 1))
				draw(c)
				if c.measured {
					l.lag.Record(now.Sub(at))
					l.sends = append(l.sends, int64(now.Sub(start)))
					l.planned = append(l.planned, int64(at.Sub(start)))
					g.measuredPending.Add(1)
				}
				g.pending.Add(1)
				t.Send(ctx, l.id, c)
			}
		})
	}
	wg.Wait()
	// Wait for the calls in flight; those planned in the window that are
	// still unanswered at the deadline count as lost (infinite latency).
	deadline := time.Now().Add(p.Drain)
	for g.pending.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	var s Stats
	s.Rate, s.Secs = p.Rate, p.Dur.Seconds()
	var sends, planned []int64
	g.closed.Store(true)
	for _, l := range g.lanes {
		// A barrier: an answer being recorded under the lock is done.
		l.mu.Lock()
		l.mu.Unlock() //lint:ignore SA2001 the empty section is the barrier
	}
	s.Lost = g.measuredPending.Load()
	for _, l := range g.lanes {
		l.mu.Lock()
		s.Lat.Merge(&l.lat)
		s.Served.Merge(&l.served)
		s.Over.Merge(&l.over)
		s.Ok += l.ok
		s.Nacks += l.nacks
		s.Errs += l.errs
		s.answered += l.answered
		if s.FirstErr == nil {
			s.FirstErr = l.firstErr
		}
		l.mu.Unlock()
		s.Lag.Merge(&l.lag)
		sends = append(sends, l.sends...)
		planned = append(planned, l.planned...)
	}
	s.Planned = s.Ok + s.Nacks + s.Errs + s.Lost
	s.Iat = interArrivalCheck(sends, float64(p.Resolution))
	s.IatPlanned = interArrivalCheck(planned, float64(p.Resolution))
	return s
}

// laneClock waits for a lane's planned send times. A blocking wait ends
// some tens of microseconds late on a virtual machine (the timer's
// interrupt and the thread's wake-up: 60-80 µs at the median here), and
// that lag, the same for every send, would still take the shortest gaps
// out of the stream (a lane cannot send twice within it), which the
// inter-arrival test sees. So the clock aims early by its own running
// estimate of the lateness, and covers what is left, if it woke early, by
// yielding until the planned time: it never sends before it. The estimate
// follows the median lateness (a step up when a wait ends later than it,
// down when earlier), so that the rare wait the kernel delays by
// milliseconds does not make every later one yield long: while a lane
// yields, the process is busy, Go does not poll the netpoller, and on a
// shared machine a busy process loses the kernel's wake-up preference.
type laneClock struct {
	sl    *Sleeper
	ahead time.Duration // the median lateness of a blocking wait
}

// The median, not a higher quantile: aiming earlier makes the lanes
// yield longer, and a busier process was measured to be delayed by the
// kernel more often (lag p99 3 ms aiming at the 95th percentile, against
// 0.1-0.2 ms at the median, at 2000 requests/s on a shared machine).
const (
	laneAheadStep = time.Microsecond
	laneAheadMax  = 200 * time.Microsecond
)

func (c *laneClock) Until(at time.Time) {
	target := at.Add(-c.ahead)
	if d := time.Until(target); d > 0 {
		if c.sl != nil {
			c.sl.Until(target)
		} else {
			time.Sleep(d)
		}
		if time.Since(target) > c.ahead {
			c.ahead = min(c.ahead+laneAheadStep, laneAheadMax)
		} else {
			c.ahead = max(c.ahead-laneAheadStep, 0)
		}
	}
	for time.Now().Before(at) {
		runtime.Gosched()
	}
}

// expGap draws the time to a lane's next request: exponential with mean
// mean nanoseconds.
func expGap(rng *rand.Rand, mean float64) time.Duration {
	return time.Duration(rng.ExpFloat64() * mean)
}

// Quantile is the latency at q over every call planned in the window,
// refused, failed and lost ones counting as infinite: +Inf when q falls
// among those.
func (s *Stats) Quantile(q float64) float64 {
	if s.Planned == 0 {
		return math.NaN()
	}
	rank := max(int64(math.Ceil(q*float64(s.Planned))), 1)
	if rank > s.Ok {
		return math.Inf(1)
	}
	return s.Lat.Quantile(float64(rank) / float64(s.Ok))
}

// Qps is the throughput achieved: answers received in the window per
// second (a server working off a backlog after the window is not counted).
func (s *Stats) Qps() float64 {
	if s.Secs <= 0 {
		return 0
	}
	return float64(s.answered) / s.Secs
}

// NackFrac is the fraction of the window's calls refused at once.
func (s *Stats) NackFrac() float64 {
	if s.Planned == 0 {
		return 0
	}
	return float64(s.Nacks) / float64(s.Planned)
}

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
	Ad    float64 // Anderson-Darling A* of the gaps above the resolution, less it
	N     int     // gaps it tested
	Below float64 // share of gaps shorter than the resolution
	Want  float64 // that share for a Poisson stream of the same rate
	Z     float64 // (below - want) in standard errors
}

func (c iatCheck) ok() bool { return c.N > 0 && c.Ad <= adCritical && math.Abs(c.Z) <= zCritical }

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
		c.Ad = 0
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
	c.Ad, c.N = andersonDarlingExp(over), len(over)
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

// Service-time distributions of mean S (seed 001; ZygOS, NEBULA).
var Dists = []string{"fixed", "exp", "bimodal1", "bimodal2"}

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
	Qps     float64 // answered per second
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
		if !found || p.Qps > best.Qps {
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
	switch c := s.Iat; {
	case c.N == 0:
		why = append(why, "too few sends to test")
	case !c.ok():
		why = append(why, fmt.Sprintf("inter-arrivals not exponential (A-D %.2f, limit %.2f; %.1f%% of gaps under the resolution, Poisson %.1f%%, z %.1f)",
			c.Ad, adCritical, 100*c.Below, 100*c.Want, c.Z))
	}
	if len(why) == 0 {
		return true, ""
	}
	return false, fmt.Sprint(why)
}
