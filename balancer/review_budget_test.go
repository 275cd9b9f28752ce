package balancer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type rvEvent struct {
	at      time.Time
	deposit bool
}

// rvCheckBudget checks, at every grant, that retries granted in the last
// 0.9 x Window stay within Ratio x calls deposited in the last 1.1 x Window
// plus MinPerSecond x Window (a generous reading of "to within a tenth").
func rvCheckBudget(t *testing.T, evs []rvEvent, ratio, minPerSec float64, w time.Duration) {
	t.Helper()
	var grants, deps []time.Time
	for _, e := range evs {
		if e.deposit {
			deps = append(deps, e.at)
			continue
		}
		grants = append(grants, e.at)
		g := 0
		for i := len(grants) - 1; i >= 0 && e.at.Sub(grants[i]) < w*9/10; i-- {
			g++
		}
		d := 0
		for i := len(deps) - 1; i >= 0 && e.at.Sub(deps[i]) < w*11/10; i-- {
			d++
		}
		bound := ratio*float64(d) + minPerSec*w.Seconds()
		if float64(g) > bound+1 {
			t.Fatalf("at %v: %d retries granted in the last %v, calls in the last %v: %d; bound %.1f", e.at.Sub(evs[0].at), g, w*9/10, w*11/10, d, bound)
		}
	}
}

func rvRunBudget(t *testing.T, start time.Time, seed uint64, steps int, gap func(*rand.Rand) time.Duration) {
	rnd := rand.New(rand.NewPCG(seed, 17))
	b := NewRetryBudget(RetryBudgetConfig{})
	now := start
	var evs []rvEvent
	for range steps {
		now = now.Add(gap(rnd))
		if rnd.IntN(3) > 0 {
			b.Deposit(now)
			evs = append(evs, rvEvent{now, true})
		}
		for rnd.IntN(2) == 0 {
			if b.Withdraw(now) {
				evs = append(evs, rvEvent{now, false})
			} else {
				break
			}
		}
	}
	rvCheckBudget(t, evs, 0.1, 10, 10*time.Second)
}

// Promise 7: random traffic, randomized idle gaps including long ones and
// exact multiples of the window and its buckets.
func TestReviewRetryBudgetRandomized(t *testing.T) {
	for seed := range uint64(30) {
		rvRunBudget(t, rvT0, seed, 4000, func(r *rand.Rand) time.Duration {
			switch r.IntN(200) {
			case 0:
				return time.Duration(1+r.IntN(30)) * time.Second
			case 1:
				return time.Duration(1+r.IntN(5)) * 10 * time.Second
			case 2:
				return time.Hour
			}
			return time.Duration(r.IntN(20)) * time.Millisecond
		})
	}
}

// Promise 7 at time 0: a fake clock starting at the zero time.Time (or
// at the Unix epoch, or before it).
func TestReviewRetryBudgetZeroTime(t *testing.T) {
	for i, start := range []time.Time{{}, time.Unix(0, 0), time.Unix(-5, 0), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), rvT0} {
		t.Run(fmt.Sprint(start.Format(time.RFC3339)), func(t *testing.T) { rvZeroStart(t, i, start) })
	}
}

func rvZeroStart(t *testing.T, i int, start time.Time) {
	{
		b := NewRetryBudget(RetryBudgetConfig{})
		n := 0
		for range 1000 {
			if b.Withdraw(start) {
				n++
			}
		}
		if n > 100 || n == 0 {
			t.Errorf("start %d (%v): %d retries granted at once with no calls (floor 10/s x 10 s = 100)", i, start, n)
		}
		rvRunBudget(t, start, uint64(i), 3000, func(r *rand.Rand) time.Duration {
			return time.Duration(r.IntN(20)) * time.Millisecond
		})
	}
}

// Promise 7 after a long idle: a big burst of calls long ago must not fund
// retries now.
func TestReviewRetryBudgetLongIdle(t *testing.T) {
	for _, idle := range []time.Duration{10 * time.Second, 11 * time.Second, 20 * time.Second, 100 * time.Second, time.Hour, 1000 * time.Hour, 200 * 365 * 24 * time.Hour} {
		b := NewRetryBudget(RetryBudgetConfig{})
		for range 100000 {
			b.Deposit(rvT0)
		}
		later := rvT0.Add(idle)
		n := 0
		for range 20000 {
			if b.Withdraw(later) {
				n++
			}
		}
		if n > 100 {
			t.Errorf("idle %v after 100000 calls: %d retries granted (bound: floor 100)", idle, n)
		}
	}
}

// Promise 7 with the clock going backwards: calls deposited "in the
// future" then the clock steps back.
func TestReviewRetryBudgetClockBackwards(t *testing.T) {
	b := NewRetryBudget(RetryBudgetConfig{})
	n := 0
	for i := range 20 {
		at := rvT0.Add(-time.Duration(i) * time.Hour)
		for range 1000 {
			if b.Withdraw(at) {
				n++
			}
		}
	}
	if n > 100*20 {
		t.Errorf("%d retries granted", n)
	}
	// the backwards steps were each a window apart; now step forward
	// again in small steps and check the window bound on what follows.
	b2 := NewRetryBudget(RetryBudgetConfig{})
	for range 1000 {
		b2.Deposit(rvT0.Add(time.Hour))
	}
	n = 0
	for range 1000 {
		if b2.Withdraw(rvT0) {
			n++
		}
	}
	if n > 100 {
		t.Errorf("calls deposited an hour ahead funded %d retries now (floor 100)", n)
	}
}

// Promise 7: concurrent Withdraws cannot overdraw; Deposit concurrent.
func TestReviewRetryBudgetConcurrentOverdraw(t *testing.T) {
	b := NewRetryBudget(RetryBudgetConfig{})
	var granted atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				if g%2 == 0 && i < 250 {
					b.Deposit(rvT0)
				}
				if b.Withdraw(rvT0) {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	// 4 x 250 = 1000 calls: 100 + 100 floor.
	if g := granted.Load(); g > 200 {
		t.Errorf("%d retries granted for 1000 calls (bound 200)", g)
	}
}

// Promise 7: MinPerSecond negative means no floor.
func TestReviewRetryBudgetNoFloor(t *testing.T) {
	b := NewRetryBudget(RetryBudgetConfig{MinPerSecond: -1})
	for range 50 {
		b.Deposit(rvT0)
	}
	n := 0
	for range 100 {
		if b.Withdraw(rvT0) {
			n++
		}
	}
	if n > 5 {
		t.Errorf("no floor, 50 calls: %d retries (bound 5)", n)
	}
}

// Promise 7 at a period wrap: a bucket's period number is kept in 32 bits,
// and 2^32 is not a multiple of the 10 buckets, so around a wrap two
// periods inside one window share a slot; a grant in the newer one
// overwrites the older one's retries and the budget forgets them. Wraps
// fall at k x 2^32 x Window/10: the Unix epoch for every window, 2106-02-07
// for the default 10 s, 2038-01-19 for 1 s, every 497 days for 100 ms.
func TestReviewRetryBudgetPeriodWrap(t *testing.T) {
	for _, c := range []struct {
		window time.Duration
		wrap   time.Time
		minPS  float64
	}{
		{10 * time.Second, time.Unix(0, 0), 0},
		{10 * time.Second, time.Unix(1<<32, 0), 0},
		{time.Second, time.Unix(1<<31, 0), 0},
		{100 * time.Millisecond, time.Unix(0, 42*(1<<32)*int64(10*time.Millisecond)), 1000},
	} {
		bucket := c.window / 10
		floor := int(10 * c.window.Seconds())
		if c.minPS != 0 {
			floor = int(c.minPS * c.window.Seconds())
		}
		worst, where := 0, ""
		// Half the floor at one instant before the wrap, then as many as
		// granted at one instant after it, less than 0.9 window later.
		for i := -9; i < 0; i++ {
			for j := 0; j-i < 9; j++ {
				old := c.wrap.Add(time.Duration(i)*bucket + bucket/2)
				cur := c.wrap.Add(time.Duration(j)*bucket + bucket/2)
				b := NewRetryBudget(RetryBudgetConfig{Window: c.window, MinPerSecond: c.minPS})
				n := 0
				for range floor / 2 {
					if b.Withdraw(old) {
						n++
					}
				}
				for range 2 * floor {
					if b.Withdraw(cur) {
						n++
					}
				}
				if n > worst {
					worst, where = n, fmt.Sprintf("%d at %v and %d at %v", floor/2, old.Sub(c.wrap), n-floor/2, cur.Sub(c.wrap))
				}
			}
		}
		if worst > floor {
			t.Errorf("window %v, wrap at %v: no calls, floor %d, yet %d retries granted %s from the wrap", c.window, c.wrap.UTC().Format(time.RFC3339), floor, worst, where)
		}
	}
}

// Promise 7 with concurrent callers: each reads the clock, then takes the
// mutex, so Withdraw sees times slightly out of order. A caller whose
// reading (1 ms old) falls in the previous bucket must not be granted
// retries the budget already gave out in the current one.
func TestReviewRetryBudgetStaleReading(t *testing.T) {
	b := NewRetryBudget(RetryBudgetConfig{})
	tick := rvT0.Add(37 * time.Second) // a bucket boundary
	n := 0
	for range 1000 {
		if b.Withdraw(tick) {
			n++
		}
	}
	late := 0
	for range 1000 {
		if b.Withdraw(tick.Add(-time.Millisecond)) {
			late++
		}
	}
	if n+late > 100 {
		t.Errorf("no calls, floor 100: %d retries granted at %v and %d more to callers whose clock read 1 ms earlier", n, tick.Format("15:04:05.000"), late)
	}
}

// Promise 7 (hostile config): NaN is not a zero field; it must not lift
// the bound altogether.
func TestReviewRetryBudgetNaNConfig(t *testing.T) {
	for _, cfg := range []RetryBudgetConfig{{Ratio: math.NaN()}, {MinPerSecond: math.NaN()}} {
		b := NewRetryBudget(cfg)
		n := 0
		for range 100000 {
			if b.Withdraw(rvT0) {
				n++
			}
		}
		if n > 1000 {
			t.Errorf("%+v: no calls, %d retries granted at one instant", cfg, n)
		}
	}
}
