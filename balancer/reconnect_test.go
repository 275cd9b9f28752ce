package balancer

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestBackoffBoundsAndSpread: attempt n waits in [0, min(Max, Base×2^n)),
// spread over the whole window (each quarter gets draws), for defaults
// and a custom setting, huge attempt numbers included.
func TestBackoffBoundsAndSpread(t *testing.T) {
	for _, b := range []Backoff{{}, {Base: 10 * time.Millisecond, Max: time.Second}} {
		base, ceil := b.Base, b.Max
		if base == 0 {
			base, ceil = 100*time.Millisecond, 10*time.Second
		}
		for seed := range uint64(10) {
			rnd := rand.New(rand.NewPCG(seed, 4))
			for _, attempt := range []int{-1, 0, 1, 3, 6, 10, 63, 1 << 30} {
				window := ceil
				if attempt < 20 {
					window = min(ceil, base<<max(attempt, 0))
				}
				var quarters [4]int
				for range 400 {
					d := b.Delay(attempt, rnd)
					if d < 0 || d >= window {
						t.Fatalf("%+v attempt %d: delay %v outside [0, %v)", b, attempt, d, window)
					}
					quarters[int(4*d/window)]++
				}
				for q, n := range quarters {
					if n < 50 {
						t.Fatalf("%+v attempt %d: quarter %d got %d of 400 draws", b, attempt, q, n)
					}
				}
			}
		}
	}
	if got := (Backoff{}).Next(t0, 0, nil); got.Before(t0) || !got.Before(t0.Add(100*time.Millisecond)) {
		t.Fatalf("Next: %v", got.Sub(t0))
	}
}

// startsPerWindow is the most starts within any window of length w.
func startsPerWindow(starts []time.Time, w time.Duration) int {
	slices.SortFunc(starts, time.Time.Compare)
	most, j := 0, 0
	for i := range starts {
		for starts[i].Sub(starts[j]) >= w {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// TestConnectLimiterBurst: 1000 connects asked for at one instant: Allow
// grants the burst only; Reserve schedules all 1000, no second holding
// more than rate+burst starts, the last at (1000-burst)/rate.
func TestConnectLimiterBurst(t *testing.T) {
	l := NewConnectLimiter(50, 10)
	granted := 0
	for range 1000 {
		if l.Allow(t0) {
			granted++
		}
	}
	if granted != 10 {
		t.Fatalf("Allow granted %d of a burst of 1000, want 10", granted)
	}
	if !l.Allow(t0.Add(20*time.Millisecond)) || l.Allow(t0.Add(20*time.Millisecond)) {
		t.Fatal("one token was not refilled after 20 ms at 50/s")
	}
	l = NewConnectLimiter(50, 10)
	starts := make([]time.Time, 1000)
	for i := range starts {
		starts[i] = t0.Add(l.Reserve(t0))
	}
	if most := startsPerWindow(starts, time.Second); most > 60 {
		t.Fatalf("%d connects in one second, bound 50/s + burst 10", most)
	}
	if last := starts[len(starts)-1].Sub(t0); last < 19790*time.Millisecond || last > 19810*time.Millisecond {
		t.Fatalf("last connect at %v, want 19.8 s", last)
	}
	// A caller whose clock reads earlier than the bucket's still queues
	// behind the slots already given.
	if wait := l.Reserve(t0.Add(-time.Second)); wait < 20800*time.Millisecond {
		t.Fatalf("reservation with an older clock waits %v, behind slots up to 19.8 s", wait)
	}
}

// TestRestartStorm: 200 sessions lose their server at once and retry with
// backoff through one limiter, each failing a random number of times
// before the server is back: every session reconnects, and no second
// holds more than rate+burst connects.
func TestRestartStorm(t *testing.T) {
	for seed := range uint64(20) {
		rnd := rand.New(rand.NewPCG(seed, 5))
		l := NewConnectLimiter(100, 20)
		var starts []time.Time
		var b Backoff
		// Each session: a wake-up time, attempts made, attempts it needs.
		type session struct {
			wake          time.Time
			attempt, need int
		}
		var sessions []*session
		for range 200 {
			sessions = append(sessions, &session{wake: b.Next(t0, 0, rnd), need: 1 + rnd.IntN(4)})
		}
		for len(sessions) > 0 {
			// The earliest wake-up reserves next, as sessions would.
			i := 0
			for j, s := range sessions {
				if s.wake.Before(sessions[i].wake) {
					i = j
				}
			}
			s := sessions[i]
			start := s.wake.Add(l.Reserve(s.wake))
			starts = append(starts, start)
			if s.attempt++; s.attempt == s.need {
				sessions = slices.Delete(sessions, i, i+1)
				continue
			}
			s.wake = b.Next(start, s.attempt, rnd)
		}
		if len(starts) < 200 {
			t.Fatalf("seed %d: %d connects", seed, len(starts))
		}
		if most := startsPerWindow(starts, time.Second); most > 120 {
			t.Fatalf("seed %d: %d connects in one second, bound 100/s + burst 20", seed, most)
		}
	}
}

// TestAgeJitter: lifetimes fall in [maxAge×(1-j), maxAge×(1+j)] and spread
// over it; no maxAge, no aging.
func TestAgeJitter(t *testing.T) {
	rnd := rand.New(rand.NewPCG(6, 6))
	const maxAge = 10 * time.Minute
	lo, hi := time.Duration(1<<62), time.Duration(0)
	for range 10000 {
		d := AgeJitter(maxAge, 0.1, rnd)
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 9*time.Minute || hi > 11*time.Minute || lo > 9*time.Minute+6*time.Second || hi < 11*time.Minute-6*time.Second {
		t.Fatalf("lifetimes %v..%v, want spread over 9m..11m", lo, hi)
	}
	if AgeJitter(0, 0.1, nil) != 0 || AgeJitter(maxAge, 0, nil) != maxAge || AgeJitter(maxAge, 5, rnd) > 2*maxAge {
		t.Fatal("edge cases")
	}
}

// TestConnectLimiterConcurrent: goroutines reserving at once (under
// -race) get distinct slots that keep to the rate.
func TestConnectLimiterConcurrent(t *testing.T) {
	l := NewConnectLimiter(100, 5)
	var mu sync.Mutex
	var starts []time.Time
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				s := t0.Add(l.Reserve(t0))
				mu.Lock()
				starts = append(starts, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if most := startsPerWindow(starts, time.Second); most > 105 {
		t.Fatalf("%d connects in one second, bound 100/s + burst 5", most)
	}
	if last := starts[len(starts)-1].Sub(t0); last < 7940*time.Millisecond {
		t.Fatalf("800 slots end at %v, want 7.95 s", last)
	}
}
