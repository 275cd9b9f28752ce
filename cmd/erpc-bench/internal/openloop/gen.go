package openloop

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
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

// Planned is the time the call was planned to be sent, from which its
// latency counts.
func (c *Call) Planned() time.Time { return c.planned }

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
	IAT                   iatCheck   // the actual send times
	IATPlanned            iatCheck   // the same test on the planned times
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
	s.IAT = interArrivalCheck(sends, float64(p.Resolution))
	s.IATPlanned = interArrivalCheck(planned, float64(p.Resolution))
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

// QPS is the throughput achieved: answers received in the window per
// second (a server working off a backlog after the window is not counted).
func (s *Stats) QPS() float64 {
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
