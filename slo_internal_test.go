package erpc

import (
	"math"
	"testing"
	"time"
)

func TestAdmissionBound(t *testing.T) {
	cases := []struct {
		target, mean time.Duration
		workers      int
		perWorker    bool
		want         int
	}{
		{10 * time.Millisecond, time.Millisecond, 1, false, 9}, // (T-S)/S
		{10 * time.Millisecond, time.Millisecond, 4, false, 36},
		{10 * time.Millisecond, time.Millisecond, 4, true, 9}, // per worker queue
		{time.Millisecond, time.Millisecond, 4, false, 0},     // no slack: refuse all queueing
		{0, time.Millisecond, 4, false, math.MaxInt},          // no target
	}
	for _, c := range cases {
		var a admission
		a.init(c.target, c.mean, c.workers, c.perWorker)
		if got := a.maxQueued(); got != c.want {
			t.Errorf("target %v mean %v workers %d perWorker %v: maxQueued %d, want %d",
				c.target, c.mean, c.workers, c.perWorker, got, c.want)
		}
	}
}

// TestAdmissionMeasuresMean: without a given mean the bound follows the
// handlers' measured durations.
func TestAdmissionMeasuresMean(t *testing.T) {
	var a admission
	a.init(10*time.Millisecond, 0, 2, false)
	if !a.measuring() || !a.ok(1000) {
		t.Fatal("with no measure yet it must measure and admit")
	}
	for range 500 {
		a.observe(2 * time.Millisecond)
	}
	if got := a.maxQueued(); got != 8 { // 2 x (10-2)/2
		t.Fatalf("maxQueued after 2 ms handlers: %d, want 8", got)
	}
	for range 500 {
		a.observe(5 * time.Millisecond)
	}
	if got := a.maxQueued(); got != 2 { // 2 x (10-5)/5
		t.Fatalf("maxQueued after 5 ms handlers: %d, want 2", got)
	}
	var given admission
	given.init(10*time.Millisecond, time.Millisecond, 1, false)
	if given.measuring() {
		t.Fatal("a given mean needs no measuring")
	}
}
