package erpc

import (
	"math"
	"math/rand/v2"
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
	if a.fixed || !a.ok(1000, 2) {
		t.Fatal("with no measure yet it must measure and admit")
	}
	for range 500 {
		a.observe(2*time.Millisecond, 2*time.Millisecond)
	}
	if got := a.maxQueued(); got != 8 { // 2 x (10-2)/2
		t.Fatalf("maxQueued after 2 ms handlers: %d, want 8", got)
	}
	for range 500 {
		a.observe(5*time.Millisecond, 5*time.Millisecond)
	}
	if got := a.maxQueued(); got != 2 { // 2 x (10-5)/5
		t.Fatalf("maxQueued after 5 ms handlers: %d, want 2", got)
	}
	var given admission
	given.init(10*time.Millisecond, time.Millisecond, 1, false)
	if !given.fixed {
		t.Fatal("a given mean needs no measuring")
	}
}

// TestAdmissionFeedback: answers later than the target shrink the bound
// the mean gives; answers in time let it grow back, never past it, and
// the bound settles where about one answer in a hundred is late.
func TestAdmissionFeedback(t *testing.T) {
	var a admission
	a.init(10*time.Millisecond, time.Millisecond, 4, false)
	const ms = time.Millisecond
	for range 20 {
		a.observe(ms, 12*ms) // late
	}
	if got := a.maxQueued(); got >= 36/2 || got < 1 {
		t.Fatalf("after 20 late answers maxQueued = %d, want below half of 36 and at least 1", got)
	}
	for range 100_000 {
		a.observe(ms, 5*ms)
	}
	if got := a.maxQueued(); got != 36 {
		t.Fatalf("after timely answers maxQueued = %d, want back at the mean's bound 36", got)
	}
	for range 10_000 {
		a.observe(ms, 20*ms)
	}
	if got := a.maxQueued(); got != 1 {
		t.Fatalf("with every answer late maxQueued = %d, want the floor 1 (wait for the next free worker)", got)
	}
	// A simulated queue whose answers are late in proportion to its
	// depth beyond 20: the bound settles where 1% are late.
	rng := uint64(1)
	late := 0
	const n = 200_000
	for i := range n {
		rng = rng*6364136223846793005 + 1442695040888963407
		depth := a.maxQueued()
		p := float64(max(0, depth-20)) / 16 // 16 deep past 20: all late
		isLate := float64(rng>>11)/float64(1<<53) < p
		if i >= n/2 && isLate {
			late++
		}
		sojourn := 5 * ms
		if isLate {
			sojourn = 11 * ms
		}
		a.observe(ms, sojourn)
	}
	if frac := float64(late) / (n / 2); frac < 0.005 || frac > 0.02 {
		t.Fatalf("late fraction at equilibrium %.4f, want about 0.01 (bound %d)", frac, a.maxQueued())
	}
}

// TestAdmissionFreeWorkerRecovers: for random targets, given means (at,
// below or above the target) or measured ones, and slow phases of any
// length, a request that finds a worker free is admitted; and once the
// slow phase ends, timely runs bring a measured bound back above zero.
func TestAdmissionFreeWorkerRecovers(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	for range 2000 {
		target := time.Duration(1+rng.Int64N(int64(20*time.Millisecond))) + time.Microsecond
		var mean time.Duration
		if rng.IntN(2) == 0 {
			mean = time.Duration(rng.Int64N(int64(4 * target)))
		}
		workers := 1 + rng.IntN(8)
		var a admission
		a.init(target, mean, workers, rng.IntN(2) == 0)
		for range rng.IntN(64) { // the slow phase
			run := target + time.Duration(rng.Int64N(int64(10*target)))
			a.observe(run, run)
			if free := rng.IntN(a.workers); !a.ok(rng.IntN(4096), free) {
				t.Fatalf("target %v mean %v: refused with %d of %d workers in service", target, mean, free, a.workers)
			}
		}
		if mean != 0 {
			continue
		}
		for range 1000 { // a tenth of the target each: the mean decays
			a.observe(target/10, target/10)
		}
		if got := a.maxQueued(); got < 1 {
			t.Fatalf("target %v: after the slow phase maxQueued = %d, want at least 1", target, got)
		}
	}
}
