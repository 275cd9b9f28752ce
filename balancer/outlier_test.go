package balancer

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

var (
	t0      = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	errDown = errors.New("unavailable")
)

func failed() DoneInfo   { return DoneInfo{Latency: time.Millisecond, Err: errDown} }
func ok() DoneInfo       { return DoneInfo{Latency: time.Millisecond} }
func neverRan() DoneInfo { return DoneInfo{Err: errDown, NeverRan: true} }

func newOutlier(rs []*Replica, seed uint64) *Outlier {
	o := NewOutlier(OutlierConfig{Rand: rand.New(rand.NewPCG(seed, 3))})
	o.SetReplicas(rs)
	return o
}

// TestOutlierConsecutiveFailures: the fifth failure in a row ejects; a
// success restarts the count; never-ran failures count neither way.
func TestOutlierConsecutiveFailures(t *testing.T) {
	rs := newReplicas(4)
	o := newOutlier(rs, 1)
	r := rs[0]
	for range 4 {
		if o.Observe(r, failed(), t0) {
			t.Fatal("ejected before the fifth failure")
		}
	}
	o.Observe(r, ok(), t0)
	for range 4 {
		o.Observe(r, failed(), t0)
		for range 10 {
			if o.Observe(r, neverRan(), t0) {
				t.Fatal("a never-ran call ejected")
			}
		}
	}
	if o.Status(r) != Serving {
		t.Fatal("ejected after 4 failures in a row")
	}
	if !o.Observe(r, failed(), t0) || o.Status(r) != Ejected {
		t.Fatal("not ejected by the fifth failure in a row (never-ran calls between)")
	}
	if o.Observe(r, failed(), t0) {
		t.Fatal("a late call on an ejected replica reported a change")
	}
}

// TestOutlierBackoffGrowsAndProbes: each failed probe ejects for about
// twice as long (1 s, 2 s, 4 s … capped at 30 s, less up to 20 % jitter);
// one probe at a time; a successful probe returns the replica.
func TestOutlierBackoffGrowsAndProbes(t *testing.T) {
	for seed := range uint64(20) {
		rs := newReplicas(4)
		o := newOutlier(rs, seed)
		r := rs[2]
		now := t0
		for range 5 {
			o.Observe(r, failed(), now)
		}
		for n, want := range []time.Duration{1, 2, 4, 8, 16, 30, 30, 30} {
			want *= time.Second
			// Just before the shortest ejection this step may draw: no probe.
			if p := o.Probe(now.Add(want*8/10 - time.Millisecond)); p != nil {
				t.Fatalf("seed %d ejection %d: probe before %v", seed, n+1, want*8/10)
			}
			var p *Replica
			var waited time.Duration
			for waited = want * 8 / 10; p == nil && waited <= want; waited += 10 * time.Millisecond {
				p = o.Probe(now.Add(waited))
			}
			if p != r || o.Status(r) != Probing {
				t.Fatalf("seed %d ejection %d: no probe by %v (got %v)", seed, n+1, want, p)
			}
			now = now.Add(waited)
			if o.Probe(now.Add(time.Hour)) != nil {
				t.Fatal("a second probe while one is out")
			}
			if o.ObserveProbe(r, failed(), now) || o.Status(r) != Ejected {
				t.Fatal("a failed probe did not eject again")
			}
		}
		now = now.Add(30 * time.Second)
		if o.Probe(now) != r {
			t.Fatal("no probe after the capped ejection")
		}
		r.State.ObserveLatency(time.Second)
		if !o.ObserveProbe(r, ok(), now) || o.Status(r) != Serving {
			t.Fatal("a successful probe did not return the replica")
		}
		if r.State.Samples() != 0 || r.State.failures.Load() != 0 {
			t.Fatal("a returned replica keeps its old average or failures")
		}
	}
}

// TestOutlierJitterSpread: replicas ejected at the same instant come back
// at different times, all within [0.8, 1] of the backoff.
func TestOutlierJitterSpread(t *testing.T) {
	rs := newReplicas(100)
	o := NewOutlier(OutlierConfig{MaxEjectedFraction: 1, Rand: rand.New(rand.NewPCG(9, 9))})
	o.SetReplicas(rs)
	for _, r := range rs[:99] {
		for range 5 {
			o.Observe(r, failed(), t0)
		}
	}
	seen := map[time.Duration]bool{}
	lo, hi := time.Hour, time.Duration(0)
	for _, r := range rs[:99] {
		d := o.state[r].until.Sub(t0)
		seen[d] = true
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 800*time.Millisecond || hi > time.Second || len(seen) < 90 || hi-lo < 150*time.Millisecond {
		t.Fatalf("first ejections span %v..%v, %d distinct", lo, hi, len(seen))
	}
}

// TestOutlierNeverRanProbe: a probe that never ran leaves the replica due
// for another probe at once.
func TestOutlierNeverRanProbe(t *testing.T) {
	rs := newReplicas(2)
	o := newOutlier(rs, 2)
	for range 5 {
		o.Observe(rs[0], failed(), t0)
	}
	now := t0.Add(time.Second)
	if o.Probe(now) != rs[0] {
		t.Fatal("no probe")
	}
	o.ObserveProbe(rs[0], neverRan(), now)
	if o.Status(rs[0]) != Ejected || o.Probe(now) != rs[0] {
		t.Fatal("a never-ran probe did not leave the replica due")
	}
}

// TestOutlierCountRestarts: once a replica has served MaxEjection since
// returning, its next ejection is short again; sooner, it is longer.
func TestOutlierCountRestarts(t *testing.T) {
	rs := newReplicas(2)
	o := newOutlier(rs, 3)
	r := rs[0]
	ejectAndReturn := func(now time.Time) (time.Duration, time.Time) {
		for range 5 {
			o.Observe(r, failed(), now)
		}
		d := o.state[r].until.Sub(now)
		now = o.state[r].until
		if o.Probe(now) != r || !o.ObserveProbe(r, ok(), now) {
			t.Fatal("no return")
		}
		return d, now
	}
	_, now := ejectAndReturn(t0)
	d, now := ejectAndReturn(now.Add(29 * time.Second))
	if d < 1600*time.Millisecond {
		t.Fatalf("second ejection 29 s after returning lasted %v, want ~2 s", d)
	}
	if d, _ = ejectAndReturn(now.Add(30 * time.Second)); d > time.Second {
		t.Fatalf("ejection after 30 s serving lasted %v, want ~1 s", d)
	}
}

// TestOutlierProbeTimeout: a probe whose end is never reported is given
// up by Sweep after MaxEjection, and the replica ejected again.
func TestOutlierProbeTimeout(t *testing.T) {
	rs := newReplicas(2)
	o := newOutlier(rs, 4)
	for range 5 {
		o.Observe(rs[0], failed(), t0)
	}
	now := t0.Add(time.Second)
	o.Probe(now)
	o.Sweep(now.Add(29 * time.Second))
	if o.Status(rs[0]) != Probing {
		t.Fatal("probe given up early")
	}
	o.Sweep(now.Add(30 * time.Second))
	if o.Status(rs[0]) != Ejected || o.state[rs[0]].count != 2 {
		t.Fatalf("probe not given up: %v, count %d", o.Status(rs[0]), o.state[rs[0]].count)
	}
}

// TestOutlierObserveAllocs: the per-call path (Observe of a success or a
// failure that does not eject, Probe with none due) allocates nothing.
func TestOutlierObserveAllocs(t *testing.T) {
	rs := newReplicas(4)
	o := newOutlier(rs, 8)
	allocs := testing.AllocsPerRun(1000, func() {
		o.Observe(rs[0], ok(), t0)
		o.Observe(rs[0], failed(), t0)
		o.Observe(rs[1], neverRan(), t0)
		if o.Probe(t0) != nil {
			panic("probe")
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocs per call", allocs)
	}
}
