package openloop

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
)

// TestAndersonDarlingValue checks the statistic against a value computed
// independently (Python, from the textbook formula).
func TestAndersonDarlingValue(t *testing.T) {
	got := andersonDarlingExp([]float64{0.1, 0.5, 1.0, 2.0, 3.0, 0.05, 0.7})
	if want := 0.31656350469864547; math.Abs(got-want) > 1e-9 {
		t.Errorf("A* = %v, want %v", got, want)
	}
}

// TestInterArrivalsExponential: the generator's gaps pass the test about
// 99 times in 100, and the merged stream of several lanes (what the
// server sees) passes too; fixed, uniform and bunched gaps fail it.
func TestInterArrivalsExponential(t *testing.T) {
	const n, seeds = 5000, 40
	fails, failsRes := 0, 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 99))
		gaps := make([]float64, n)
		times := make([]int64, n+1)
		for i := range gaps {
			gaps[i] = float64(expGap(rng, 250e3))
			times[i+1] = times[i] + int64(gaps[i])
		}
		if a := andersonDarlingExp(gaps); !(a <= adCritical) {
			fails++
		}
		if c := interArrivalCheck(times, 100e3); !c.ok() {
			failsRes++
		}
	}
	// 1% expected (1.1% at a resolution): P(more than 3 of 40) < 0.1%.
	if fails > 3 || failsRes > 3 {
		t.Errorf("%d and %d (at 100 µs) of %d exponential samples rejected", fails, failsRes, seeds)
	}

	// Four lanes of rate r/4 each, merged: a Poisson stream of rate r.
	var sends []int64
	for lane := range 4 {
		rng := rand.New(rand.NewPCG(7, uint64(lane)+1))
		at := int64(0)
		for range n / 4 {
			at += int64(expGap(rng, 4*250e3))
			sends = append(sends, at)
		}
	}
	if c := interArrivalCheck(sends, 0); !c.ok() || c.N != n-1 {
		t.Errorf("merged lanes: %+v", c)
	}
	// One lane that cannot send twice within 60 µs (a wake-up's cost on a
	// virtual machine): at full resolution the missing short gaps are
	// seen; at a resolution of 100 µs the stream passes.
	rng := rand.New(rand.NewPCG(8, 9))
	dead := make([]int64, n)
	var planned int64
	for i := range dead {
		planned += int64(expGap(rng, 1000e3))
		dead[i] = planned
		if i > 0 {
			dead[i] = max(planned, dead[i-1]+60e3)
		}
	}
	if c := interArrivalCheck(slices.Clone(dead), 0); c.ok() {
		t.Errorf("dead time, at full resolution: passes, %+v", c)
	}
	if c := interArrivalCheck(slices.Clone(dead), 100e3); !c.ok() {
		t.Errorf("dead time, at 100 µs: %+v", c)
	}

	rng = rand.New(rand.NewPCG(1, 2))
	for name, gen := range map[string]func(i int) float64{
		"fixed":   func(int) float64 { return 250e3 },
		"uniform": func(int) float64 { return rng.Float64() * 500e3 },
		// Exponential gaps, but every tenth send delayed and the next
		// ones bunched behind it, as a generator that fell behind does.
		"bunched": func(i int) float64 {
			if i%10 < 3 {
				return 1e3
			}
			return rng.ExpFloat64() * 250e3
		},
	} {
		gaps := make([]float64, n)
		for i := range gaps {
			gaps[i] = gen(i)
		}
		if a := andersonDarlingExp(slices.Clone(gaps)); a <= adCritical {
			t.Errorf("%s gaps pass: A* = %.2f", name, a)
		}
		// And at a resolution of 100 µs.
		times := make([]int64, n+1)
		for i, g := range gaps {
			times[i+1] = times[i] + int64(g)
		}
		if c := interArrivalCheck(times, 100e3); c.ok() {
			t.Errorf("%s gaps pass at 100 µs: %+v", name, c)
		}
	}
}

// stallTarget is a fake server: one worker answering in FIFO order at
// once, except that it stops for the stall window [from, to).
type stallTarget struct {
	q        chan *Call
	from, to time.Time
}

func (s *stallTarget) Send(_ context.Context, _ int, c *Call) { s.q <- c }

func (s *stallTarget) Run() {
	for c := range s.q {
		if now := time.Now(); !now.Before(s.from) && now.Before(s.to) {
			time.Sleep(time.Until(s.to))
		}
		c.Finish(nil, false, 0)
	}
}

// TestPlannedTimeAccounting: the server stalls for 300 ms in the middle of
// a 1 s window at 1000 requests/s. The generator keeps sending through the
// stall (open loop: about as many calls as planned), and the calls
// planned during it carry the stall in their latency, measured from
// their planned send times: about 30% of the calls take up to 300 ms, so
// p90 and p99 are in the hundreds of milliseconds, although the server
// answers at once otherwise.
func TestPlannedTimeAccounting(t *testing.T) {
	const rate, warm, dur, stall = 1000.0, 100 * time.Millisecond, time.Second, 300 * time.Millisecond
	tg := &stallTarget{q: make(chan *Call, 100000)}
	start := time.Now()
	// The generator starts about a millisecond after it is called.
	tg.from = start.Add(warm + 400*time.Millisecond)
	tg.to = tg.from.Add(stall)
	go tg.Run()
	defer close(tg.q)
	st := Run(tg, Plan{Rate: rate, Lanes: 2, Sessions: 1, Warmup: warm, Dur: dur, Drain: 5 * time.Second,
		Seed: 3, NewDraw: func(*rand.Rand) func(*Call) { return func(*Call) {} }})
	if st.Lost != 0 || st.Errs != 0 || st.Nacks != 0 {
		t.Fatalf("lost %d, errors %d, nacks %d", st.Lost, st.Errs, st.Nacks)
	}
	if st.Ok < 850 || st.Ok > 1150 {
		t.Errorf("%d calls in the window, want about %v: the generator did not keep sending", st.Ok, rate*dur.Seconds())
	}
	p50, p90, p99 := st.Quantile(0.5)/1e6, st.Quantile(0.9)/1e6, st.Quantile(0.99)/1e6
	t.Logf("p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.1f ms", p50, p90, p99, float64(st.Lat.Max)/1e6)
	if p90 < 100 || p99 < 250 || float64(st.Lat.Max)/1e6 < 280 {
		t.Errorf("the stall is missing from the latency: p90 %.1f ms, p99 %.1f ms", p90, p99)
	}
	if p50 > 50 {
		t.Errorf("p50 %.1f ms: calls outside the stall should be fast", p50)
	}
	// Measured from the actual send (what a closed-loop generator that
	// waits for each answer would report), nothing would exceed the stall
	// plus the service time; from the planned time, calls planned during
	// the stall do, and the count of those above 150 ms matches the
	// stall's second half: about 150 of them.
	var slow int
	for i := range st.Lat.Counts {
		if meter.HistValue(i) > int64(150*time.Millisecond) {
			slow += int(st.Lat.Counts[i])
		}
	}
	if slow < 100 || slow > 200 {
		t.Errorf("%d calls slower than 150 ms, want about 150", slow)
	}
}

// TestInfiniteLatency: NACKs count as infinite latency in the
// percentiles.
func TestInfiniteLatency(t *testing.T) {
	var s Stats
	for i := range 980 {
		s.Lat.Record(time.Duration(i) * time.Microsecond)
	}
	s.Ok, s.Nacks, s.Planned = 980, 20, 1000
	if q := s.Quantile(0.5); math.IsInf(q, 0) || q > 600e3 {
		t.Errorf("p50 %v", q)
	}
	if q := s.Quantile(0.99); !math.IsInf(q, 1) {
		t.Errorf("p99 %v with 2%% NACKs, want +Inf", q)
	}
	if q := s.Quantile(0.98); math.IsInf(q, 0) {
		t.Errorf("p98 %v with 2%% NACKs should be finite", q)
	}
	if f := s.NackFrac(); f != 0.02 {
		t.Errorf("nack fraction %v", f)
	}
}

func TestMaxUnderSLO(t *testing.T) {
	inf := math.Inf(1)
	p := func(off, qps, p99 float64, valid bool) Point {
		return Point{Offered: off, QPS: qps, P99: p99, Valid: valid}
	}
	for _, c := range []struct {
		name string
		pts  []Point
		want float64 // qps; 0: none
	}{
		{"monotone", []Point{p(100, 100, 2, true), p(200, 199, 5, true), p(300, 290, 12, true), p(400, 350, inf, true)}, 199},
		{"unsorted", []Point{p(300, 290, 12, true), p(100, 100, 2, true), p(200, 199, 5, true)}, 199},
		{"invalid skipped", []Point{p(100, 100, 2, true), p(200, 199, 5, false), p(300, 298, 9, true), p(400, 380, 20, true)}, 298},
		{"invalid failing point does not stop", []Point{p(100, 100, 2, true), p(200, 199, 50, false), p(300, 298, 9, true)}, 298},
		{"lucky point after a miss", []Point{p(100, 100, 2, true), p(200, 199, 15, true), p(300, 298, 9, true)}, 100},
		{"exactly at the SLO", []Point{p(100, 100, 10, true)}, 100},
		{"none", []Point{p(100, 100, 11, true), p(200, 200, 3, true)}, 0},
		{"all invalid", []Point{p(100, 100, 1, false)}, 0},
		{"infinite at once", []Point{p(100, 90, inf, true)}, 0},
	} {
		got, ok := MaxUnderSLO(c.pts, 10)
		if c.want == 0 {
			if ok {
				t.Errorf("%s: got %v, want none", c.name, got.QPS)
			}
			continue
		}
		if !ok || got.QPS != c.want {
			t.Errorf("%s: got %v (%v), want %v", c.name, got.QPS, ok, c.want)
		}
	}
}

func TestServiceDistributions(t *testing.T) {
	const s, n = time.Millisecond, 400000
	for _, d := range Dists {
		rng := rand.New(rand.NewPCG(5, 6))
		var sum float64
		counts := map[time.Duration]int{}
		for range n {
			v := DrawService(d, s, rng)
			sum += float64(v)
			counts[v]++
		}
		mean := sum / n / float64(s)
		tol := 0.01
		if d == "bimodal2" {
			tol = 0.1 // the mean rides on 0.1% of the draws
		}
		if math.Abs(mean-1) > tol {
			t.Errorf("%s: mean %.4f S", d, mean)
		}
		switch d {
		case "bimodal1":
			if f := float64(counts[s*11/2]) / n; len(counts) != 2 || math.Abs(f-0.1) > 0.003 {
				t.Errorf("bimodal1: %d values, %.4f long", len(counts), f)
			}
		case "bimodal2":
			if f := float64(counts[s*1001/2]) / n; len(counts) != 2 || math.Abs(f-0.001) > 0.0003 {
				t.Errorf("bimodal2: %d values, %.5f long", len(counts), f)
			}
		case "fixed":
			if len(counts) != 1 {
				t.Errorf("fixed: %d values", len(counts))
			}
		}
	}
}

// TestSleeper: a sleeper never returns early, and a stale expiry from an
// earlier wait does not end a later one.
func TestSleeper(t *testing.T) {
	s, err := NewSleeper()
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	for _, d := range []time.Duration{0, 50 * time.Microsecond, 500 * time.Microsecond, 2 * time.Millisecond, 200 * time.Microsecond} {
		deadline := time.Now().Add(d)
		s.Until(deadline)
		if now := time.Now(); now.Before(deadline) {
			t.Errorf("%v: returned %v early", d, deadline.Sub(now))
		}
	}
}
