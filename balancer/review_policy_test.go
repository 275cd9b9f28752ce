package balancer

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"
)

// rvMaxInWindow is the most start times in any half-open window [s, s+w).
func rvMaxInWindow(starts []time.Time, w time.Duration) int {
	s := append([]time.Time(nil), starts...)
	sort.Slice(s, func(i, j int) bool { return s[i].Before(s[j]) })
	best, j := 0, 0
	for i := range s {
		for s[i].Sub(s[j]) >= w {
			j++
		}
		if i-j+1 > best {
			best = i - j + 1
		}
	}
	return best
}

// Promise 6: Reserve at one instant by hundreds of sessions: starts in any
// second at most rate+burst, including rate 0/negative/NaN clamped to 1.
func TestReviewConnectLimiterStorm(t *testing.T) {
	for _, c := range []struct {
		rate  float64
		burst int
		bound int
	}{{5, 3, 8}, {0, 0, 2}, {-4, -1, 2}, {0.5, 1, 2}, {math.NaN(), 1, 2}, {1e-300, 1, 2}} {
		l := NewConnectLimiter(c.rate, c.burst)
		var starts []time.Time
		for range 300 {
			d := l.Reserve(rvT0)
			if d < 0 {
				t.Fatalf("rate %v burst %d: negative reservation %v", c.rate, c.burst, d)
			}
			starts = append(starts, rvT0.Add(d))
		}
		if m := rvMaxInWindow(starts, time.Second); m > c.bound {
			t.Errorf("rate %v burst %d: %d connects start within one second (bound %d)", c.rate, c.burst, m, c.bound)
		}
	}
}

// Promise 6: concurrent callers read the clock and then take the limiter's
// mutex, so times arrive slightly out of order. Connects actually started
// (Allow true at now, or now+Reserve) must still keep within rate+burst
// in every second.
func TestReviewConnectLimiterOutOfOrderTimes(t *testing.T) {
	for seed := range uint64(20) {
		rnd := rand.New(rand.NewPCG(seed, 99))
		l := NewConnectLimiter(10, 2)
		var starts []time.Time
		now := rvT0
		for range 5000 {
			now = now.Add(time.Duration(rnd.IntN(20)) * time.Millisecond)
			// this caller read the clock up to 50 ms ago.
			at := now.Add(-time.Duration(rnd.IntN(50)) * time.Millisecond)
			if rnd.IntN(2) == 0 {
				if l.Allow(at) {
					starts = append(starts, at)
				}
			} else {
				starts = append(starts, at.Add(l.Reserve(at)))
			}
		}
		if m := rvMaxInWindow(starts, time.Second); m > 12 {
			t.Fatalf("seed %d: %d connects start within one second (rate 10, burst 2: bound 12)", seed, m)
		}
	}
}

// Promise 6: a clock jump backwards (VM resume, fake clock reset) then
// forwards must not mint extra tokens.
func TestReviewConnectLimiterClockBackwards(t *testing.T) {
	l := NewConnectLimiter(1, 1)
	var starts []time.Time
	now := rvT0
	for i := range 50 {
		if l.Allow(now) {
			starts = append(starts, now)
		}
		if l.Allow(now.Add(-time.Hour)) {
			starts = append(starts, now.Add(-time.Hour))
		}
		now = now.Add(time.Duration(i%3) * 100 * time.Millisecond)
	}
	if m := rvMaxInWindow(starts, time.Second); m > 2 {
		t.Errorf("%d connects within one second (rate 1, burst 1)", m)
	}
	if len(starts) > 2+int(now.Sub(rvT0)/time.Second) {
		t.Errorf("%d connects over %v at rate 1 burst 1", len(starts), now.Sub(rvT0))
	}
}

// Promise 6: the limiter is safe for concurrent use.
func TestReviewConnectLimiterConcurrentBound(t *testing.T) {
	l := NewConnectLimiter(3, 2)
	var mu sync.Mutex
	var starts []time.Time
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				at := rvT0.Add(time.Duration(i) * 10 * time.Millisecond)
				var s time.Time
				ok := false
				if g%2 == 0 {
					s, ok = at.Add(l.Reserve(at)), true
				} else if l.Allow(at) {
					s, ok = at, true
				}
				if ok {
					mu.Lock()
					starts = append(starts, s)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if m := rvMaxInWindow(starts, time.Second); m > 5 {
		t.Errorf("%d connects within one second (rate 3, burst 2)", m)
	}
}

// Promise 6: Backoff.Delay in [0, min(Max, Base x 2^n)) for every attempt,
// including huge attempts, Base > Max, defaults.
func TestReviewBackoffBounds(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 5))
	for _, b := range []Backoff{{}, {Base: time.Millisecond, Max: time.Hour}, {Base: 20 * time.Second}, {Base: 3 * time.Second, Max: time.Second}, {Base: time.Duration(math.MaxInt64), Max: time.Duration(math.MaxInt64)}} {
		base, max := b.Base, b.Max
		if base == 0 {
			base = 100 * time.Millisecond
		}
		if max == 0 {
			max = 10 * time.Second
		}
		for _, n := range []int{0, 1, 2, 5, 10, 20, 30, 40, 62, 63, 64, 65, 100, 1000, math.MaxInt32, math.MaxInt} {
			cap := max
			if n < 63 && float64(base)*math.Pow(2, float64(n)) < float64(max) {
				cap = base << n
			}
			hi := time.Duration(0)
			for range 300 {
				d := b.Delay(n, rnd)
				if d < 0 || d >= cap {
					t.Errorf("%+v attempt %d: delay %v outside [0, %v)", b, n, d, cap)
				}
				if d > hi {
					hi = d
				}
			}
			if hi < cap/2 {
				t.Errorf("%+v attempt %d: 300 draws never above %v (cap %v): not full jitter", b, n, hi, cap)
			}
			if nx := b.Next(rvT0, n, rnd); nx.Before(rvT0) || !nx.Before(rvT0.Add(cap)) {
				t.Fatalf("%+v attempt %d: Next %v outside [now, now+%v)", b, n, nx.Sub(rvT0), cap)
			}
		}
	}
}

// Promise 6: "no cap" (Max = MaxInt64) with a 1 s base. Base x 2^n
// overflows from attempt 34: the delay must stay in [0, min(Max, Base x 2^n)),
// and must not collapse to 0 (a hot reconnect loop).
func TestReviewBackoffUncappedOverflow(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 9))
	b := Backoff{Base: time.Second, Max: time.Duration(math.MaxInt64)}
	for n := range 101 {
		cap := b.Max
		if n < 62 {
			cap = min(b.Max, b.Base*time.Duration(math.Min(float64(int64(1)<<min(n, 62)), float64(math.MaxInt64)/float64(b.Base))))
		}
		hi := time.Duration(0)
		for range 200 {
			d := b.Delay(n, rnd)
			if d < 0 || d >= cap {
				t.Errorf("attempt %d: delay %v outside [0, %v)", n, d, cap)
				break
			}
			hi = max(hi, d)
		}
		if n >= 1 && hi < b.Base/2 {
			t.Errorf("attempt %d: 200 delays all below %v (max %v): reconnects in a tight loop", n, b.Base/2, hi)
		}
		if t.Failed() {
			return
		}
	}
}

// Promise 6 (hostile): negative Base or Max must not give negative waits.
func TestReviewBackoffNegativeFields(t *testing.T) {
	rnd := rand.New(rand.NewPCG(6, 6))
	for _, b := range []Backoff{{Base: -time.Second}, {Max: -time.Second}, {Base: -1, Max: -1}} {
		for n := range 5 {
			if d := b.Delay(n, rnd); d < 0 {
				t.Errorf("%+v attempt %d: negative delay %v", b, n, d)
			}
		}
		if d := b.Delay(-1, rnd); d < 0 {
			t.Errorf("%+v attempt -1: negative delay %v", b, d)
		}
	}
}

// AgeJitter: a "forever" age or a NaN jitter must not make a negative
// lifetime (negative is never a valid age: zero means no aging).
func TestReviewAgeJitterExtremes(t *testing.T) {
	for _, c := range []struct {
		age    time.Duration
		jitter float64
	}{{time.Duration(math.MaxInt64), 0.1}, {time.Duration(math.MaxInt64 / 2), 1}, {time.Hour, 1.5}, {time.Hour, math.NaN()}, {time.Hour, math.Inf(1)}, {time.Hour, -0.5}} {
		rnd := rand.New(rand.NewPCG(8, 8))
		for range 1000 {
			d := AgeJitter(c.age, c.jitter, rnd)
			if d < 0 || (c.age == time.Hour && d > 2*time.Hour) {
				t.Errorf("AgeJitter(%v, %v) = %v", c.age, c.jitter, d)
				break
			}
		}
	}
}

// Promise 6: Delay is a draw, O(1). With Max = MaxInt64 the doubling loop
// overflows to 0 and never reaches the cap, so it runs attempt times: a
// session that has been retrying a long time (a large attempt count)
// spins in Delay.
func TestReviewBackoffDelayCost(t *testing.T) {
	// Its cost is BenchmarkBackoffDelay's (the same for attempt 1 and
	// 2^27): unit tests time nothing. What a test can check is the symptom
	// of the overflow: the old loop returned 0, a reconnect without delay.
	b := Backoff{Base: time.Second, Max: time.Duration(math.MaxInt64)}
	rnd := rand.New(rand.NewPCG(10, 10))
	for _, attempt := range []int{62, 63, 64, 1 << 27} {
		if d := b.Delay(attempt, rnd); d <= 0 {
			t.Errorf("Delay(attempt %d) = %v: the doubling overflowed", attempt, d)
		}
	}
}
