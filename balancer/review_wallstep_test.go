package balancer

import (
	"testing"
	"time"
	"unsafe"
)

// rvWallStep returns t with its wall clock moved by d and its monotonic
// reading kept: what time.Now() returns after an NTP step (or a VM's clock
// being corrected on resume), where the monotonic clock runs on. Needs t
// to carry a monotonic reading (from time.Now()). time.Time is
// {wall uint64; ext int64; loc}; with a monotonic reading, wall holds the
// seconds since 1885 in bits 30..62.
func rvWallStep(t *testing.T, tm time.Time, d time.Duration) time.Time {
	t.Helper()
	if d%time.Second != 0 {
		t.Fatal("whole seconds only")
	}
	w := (*uint64)(unsafe.Pointer(&tm))
	if *w>>63 == 0 {
		t.Fatal("no monotonic reading")
	}
	*w = uint64(int64(*w) + int64(d/time.Second)<<30)
	return tm
}

func TestReviewWallStepHelper(t *testing.T) {
	t0 := time.Now()
	t1 := rvWallStep(t, t0.Add(2*time.Second), -time.Hour)
	if t1.Sub(t0) != 2*time.Second || t0.Round(0).Sub(t1.Round(0)) != time.Hour-2*time.Second {
		t.Fatalf("helper: monotonic %v, wall %v", t1.Sub(t0), t1.Round(0).Sub(t0.Round(0)))
	}
}

// Promise 5 under a wall-clock step back of an hour (NTP correction):
// two seconds (monotonic) after an ejection the backoff has passed, and
// Probe's own comparison (e.until.After(now)) uses the monotonic clock,
// but its lock-free pre-check compares wall-clock UnixNano: the replica
// stays ejected for the hour.
func TestReviewOutlierWallClockStepBack(t *testing.T) {
	o, rs := rvOutlier(4, 16)
	t0 := time.Now()
	for range 5 {
		o.Observe(rs[0], rvFail(), t0)
	}
	later := rvWallStep(t, t0.Add(2*time.Second), -time.Hour)
	if p := o.Probe(later); p != rs[0] {
		t.Errorf("2 s (monotonic) after a 1 s ejection, with the wall clock stepped back 1 h: Probe gives %v", p)
	}
}

// Promise 7 under a wall-clock step back of a minute: the budget's buckets
// are numbered by wall-clock UnixNano, so retries granted a millisecond
// (monotonic) earlier fall "in the future" and are not counted.
func TestReviewRetryBudgetWallClockStepBack(t *testing.T) {
	b := NewRetryBudget(RetryBudgetConfig{})
	t0 := time.Now()
	n := 0
	for range 1000 {
		if b.Withdraw(t0) {
			n++
		}
	}
	later := rvWallStep(t, t0.Add(time.Millisecond), -time.Minute)
	m := 0
	for range 1000 {
		if b.Withdraw(later) {
			m++
		}
	}
	if n+m > 100 {
		t.Errorf("no calls, floor 100: %d retries granted, then %d more 1 ms later after the wall clock stepped back 1 min", n, m)
	}
}

// Promise 6 under the same step: the limiter uses now.Sub (monotonic).
func TestReviewConnectLimiterWallClockStep(t *testing.T) {
	l := NewConnectLimiter(1, 1)
	t0 := time.Now()
	n := 0
	for i := range 20 {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		if i%2 == 1 {
			at = rvWallStep(t, at, time.Hour)
		}
		if l.Allow(at) {
			n++
		}
	}
	if n > 2 {
		t.Errorf("rate 1 burst 1: %d connects allowed within 200 ms across wall-clock steps", n)
	}
}
