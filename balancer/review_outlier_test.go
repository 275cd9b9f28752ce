package balancer

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

var rvT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func rvFail() DoneInfo  { return DoneInfo{Latency: time.Millisecond, Err: errRv} }
func rvOK() DoneInfo    { return DoneInfo{Latency: time.Millisecond} }
func rvNever() DoneInfo { return DoneInfo{Err: errRv, NeverRan: true} }

func rvOutlier(n int, seed uint64) (*Outlier, []*Replica) {
	rs := rvReplicas(make([]uint32, n)...)
	o := NewOutlier(OutlierConfig{Rand: rand.New(rand.NewPCG(seed, seed))})
	o.SetReplicas(rs)
	return o, rs
}

func rvOut(o *Outlier, rs []*Replica) int {
	n := 0
	for _, r := range rs {
		if o.Status(r) != Serving {
			n++
		}
	}
	return n
}

// Promise 5: exactly 5 failures that ran; never-ran ones interleaved
// neither count nor reset.
func TestReviewOutlierFiveRanFailures(t *testing.T) {
	o, rs := rvOutlier(4, 1)
	r := rs[0]
	now := rvT0
	for i := range 4 {
		if o.Observe(r, rvFail(), now) {
			t.Fatalf("ejected after %d failures", i+1)
		}
		for range 20 {
			if o.Observe(r, rvNever(), now) {
				t.Fatalf("never-ran ejected")
			}
		}
	}
	if !o.Observe(r, rvFail(), now) || o.Status(r) != Ejected {
		t.Fatalf("not ejected after 5 failures that ran (status %v)", o.Status(r))
	}
	// 100 never-ran failures on another replica: nothing.
	for range 100 {
		o.Observe(rs[1], rvNever(), now)
	}
	if o.Status(rs[1]) != Serving {
		t.Fatalf("never-ran calls ejected a replica")
	}
}

// Promise 5: a replica returns only after a successful probe. Ordinary
// calls (success) ending while it is Probing or Ejected must not bring it back.
func TestReviewOutlierReturnsOnlyViaProbe(t *testing.T) {
	o, rs := rvOutlier(4, 2)
	r := rs[0]
	now := rvT0
	for range 5 {
		o.Observe(r, rvFail(), now)
	}
	for range 10 {
		o.Observe(r, rvOK(), now)
	}
	if o.Status(r) != Ejected {
		t.Fatalf("late successes brought it back: %v", o.Status(r))
	}
	// Sweep, huge time jumps without a probe: still out.
	o.Sweep(now.Add(24 * time.Hour))
	if o.Status(r) == Serving {
		t.Fatalf("serving again without a probe after a sweep")
	}
	p := o.Probe(now.Add(2 * time.Second))
	if p != r || o.Status(r) != Probing {
		t.Fatalf("probe %v status %v", p, o.Status(r))
	}
	o.Observe(r, rvOK(), now.Add(2*time.Second))
	if o.Status(r) != Probing {
		t.Fatalf("an ordinary call's success during probing changed status to %v", o.Status(r))
	}
	// A never-ran probe: stays due for another.
	o.ObserveProbe(r, rvNever(), now.Add(2*time.Second))
	if o.Status(r) == Serving {
		t.Fatalf("never-ran probe brought it back")
	}
	if p := o.Probe(now.Add(2 * time.Second)); p != r {
		t.Fatalf("after a never-ran probe, Probe gives %v", p)
	}
	if !o.ObserveProbe(r, rvOK(), now.Add(2*time.Second)) || o.Status(r) != Serving {
		t.Fatalf("successful probe did not bring it back")
	}
}

// Promise 5: ObserveProbe on a replica that was never probed must not
// bring an ejected replica back early (it has not been handed out).
func TestReviewOutlierObserveProbeUnprobedEjected(t *testing.T) {
	o, rs := rvOutlier(4, 3)
	r := rs[0]
	for range 5 {
		o.Observe(r, rvFail(), rvT0)
	}
	o.ObserveProbe(r, rvOK(), rvT0.Add(time.Millisecond))
	if o.Status(r) != Ejected {
		t.Fatalf("ObserveProbe(success) on an ejected replica that Probe never handed out (1 ms after ejection) gave status %v", o.Status(r))
	}
}

// Promise 5: at most half the replicas out, whatever route ejects them:
// ObserveProbe(failure) on a serving replica that was never probed.
func TestReviewOutlierObserveProbeUnprobedCap(t *testing.T) {
	o, rs := rvOutlier(4, 4)
	for _, r := range rs[:2] {
		for range 5 {
			o.Observe(r, rvFail(), rvT0)
		}
	}
	if rvOut(o, rs) != 2 {
		t.Fatalf("setup: %d out", rvOut(o, rs))
	}
	o.ObserveProbe(rs[2], rvFail(), rvT0)
	o.ObserveProbe(rs[3], rvFail(), rvT0)
	if n := rvOut(o, rs); n > 2 {
		t.Fatalf("ObserveProbe(failure) on unprobed serving replicas: %d of 4 out (cap 2)", n)
	}
}

// Promise 5: the cap holds after the set shrinks.
func TestReviewOutlierCapAfterShrink(t *testing.T) {
	o, rs := rvOutlier(4, 5)
	for _, r := range rs {
		for range 5 {
			o.Observe(r, rvFail(), rvT0)
		}
	}
	if n := rvOut(o, rs); n != 2 {
		t.Fatalf("4 replicas all failing: %d out, want 2", n)
	}
	var serving []*Replica
	var out []*Replica
	for _, r := range rs {
		if o.Status(r) == Serving {
			serving = append(serving, r)
		} else {
			out = append(out, r)
		}
	}
	// The client drops a serving replica (resolver update): 2 of 3 out.
	now3 := append(append([]*Replica(nil), out...), serving[0])
	o.SetReplicas(now3)
	o.Sweep(rvT0.Add(100 * time.Millisecond))
	if n := rvOut(o, now3); n > 1 {
		t.Errorf("after the set shrank to 3: %d out (cap floor(1.5)=1)", n)
	}
	// Down to the two ejected ones: the fleet would be all out.
	o.SetReplicas(out)
	o.Sweep(rvT0.Add(200 * time.Millisecond))
	if n := rvOut(o, out); n > 1 {
		t.Errorf("after the set shrank to 2: %d out (cap 1)", n)
	}
	// Down to one: "a lone replica is never ejected".
	o.SetReplicas(out[:1])
	o.Sweep(rvT0.Add(300 * time.Millisecond))
	if st := o.Status(out[0]); st != Serving {
		t.Errorf("after the set shrank to 1: the lone replica is %v", st)
	}
}

// Promise 5: 1 and 2 replicas.
func TestReviewOutlierOneAndTwo(t *testing.T) {
	o, rs := rvOutlier(1, 6)
	for range 100 {
		o.Observe(rs[0], rvFail(), rvT0)
	}
	for i := range 30 {
		rs[0].State.ObserveLatency(time.Hour)
		o.Sweep(rvT0.Add(time.Duration(i) * time.Second))
	}
	if o.Status(rs[0]) != Serving {
		t.Fatalf("a lone replica was ejected")
	}
	o, rs = rvOutlier(2, 7)
	for range 100 {
		o.Observe(rs[0], rvFail(), rvT0)
		o.Observe(rs[1], rvFail(), rvT0)
	}
	if n := rvOut(o, rs); n != 1 {
		t.Fatalf("2 replicas failing: %d out, want 1", n)
	}
}

// Promise 5: concurrent failures on every replica must respect the cap.
func TestReviewOutlierConcurrentCap(t *testing.T) {
	for seed := range uint64(20) {
		o, rs := rvOutlier(6, seed)
		var wg sync.WaitGroup
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					o.Observe(rs[(g+i)%len(rs)], rvFail(), rvT0)
				}
			}()
		}
		wg.Wait()
		if n := rvOut(o, rs); n > 3 {
			t.Fatalf("seed %d: %d of 6 out (cap 3)", seed, n)
		}
	}
}

// Promise 5: ejection durations 1 s, 2 s, 4 s ... capped at 30 s, less up
// to 20 % jitter; a failed probe ejects for longer.
func TestReviewOutlierBackoffSchedule(t *testing.T) {
	for seed := range uint64(30) {
		o, rs := rvOutlier(4, seed)
		r := rs[0]
		now := rvT0
		for range 5 {
			o.Observe(r, rvFail(), now)
		}
		want := time.Second
		for k := range 8 {
			lo := time.Duration(float64(want) * 0.8)
			if p := o.Probe(now.Add(lo - time.Millisecond)); p != nil {
				t.Fatalf("seed %d ejection %d: probe due before %v (want >= 0.8 x %v)", seed, k, lo, want)
			}
			due := now.Add(want)
			if p := o.Probe(due); p != r {
				t.Fatalf("seed %d ejection %d: no probe at %v", seed, k, want)
			}
			now = due
			o.ObserveProbe(r, rvFail(), now)
			if o.Status(r) != Ejected {
				t.Fatalf("failed probe: status %v", o.Status(r))
			}
			want *= 2
			if want > 30*time.Second {
				want = 30 * time.Second
			}
		}
	}
}

// Promise 5: a probe never answered; Sweep gives up after MaxEjection and
// the replica is ejected again; then the late answer arrives.
func TestReviewOutlierProbeNeverAnswered(t *testing.T) {
	o, rs := rvOutlier(4, 9)
	r := rs[0]
	for range 5 {
		o.Observe(r, rvFail(), rvT0)
	}
	t1 := rvT0.Add(time.Second)
	if o.Probe(t1) != r {
		t.Fatal("no probe")
	}
	o.Sweep(t1.Add(29 * time.Second))
	if o.Status(r) != Probing {
		t.Fatalf("gave up on probe before MaxEjection: %v", o.Status(r))
	}
	o.Sweep(t1.Add(31 * time.Second))
	if o.Status(r) != Ejected {
		t.Fatalf("probe outstanding 31 s: status %v", o.Status(r))
	}
	// The stale probe's success arrives now; the replica was re-ejected and
	// no new probe was handed out.
	o.ObserveProbe(r, rvOK(), t1.Add(32*time.Second))
	if o.Status(r) == Serving {
		t.Errorf("a stale probe answer (given up by Sweep) brought the replica back")
	}
}

// Promise 5: latency over 3x the others' median ejects; not under.
func TestReviewOutlierLatency(t *testing.T) {
	o, rs := rvOutlier(5, 10)
	for i, r := range rs {
		lat := 10 * time.Millisecond
		if i == 0 {
			lat = 35 * time.Millisecond
		}
		if i == 1 {
			lat = 25 * time.Millisecond
		}
		for range 30 {
			r.State.ObserveLatency(lat)
		}
	}
	o.Sweep(rvT0)
	if o.Status(rs[0]) != Ejected {
		t.Errorf("3.5x median not ejected")
	}
	if o.Status(rs[1]) != Serving {
		t.Errorf("2.5x median ejected")
	}
}

// Promise 5 with clocks going backwards: ejected at t, Probe at an earlier
// time must not hand the replica out.
func TestReviewOutlierClockBackwards(t *testing.T) {
	o, rs := rvOutlier(4, 11)
	for range 5 {
		o.Observe(rs[0], rvFail(), rvT0)
	}
	if p := o.Probe(rvT0.Add(-time.Hour)); p != nil {
		t.Errorf("probe handed out an hour before the ejection")
	}
	if p := o.Probe(time.Time{}); p != nil {
		t.Errorf("probe handed out at the zero time")
	}
}

// Promise 5: ejections grow 1 s -> 30 s, for every ejection count. With a
// longer base (1 min, max 1 h), BaseEjection << (n-1) overflows at the
// 29th consecutive ejection (a replica down about a day) and the ejection
// becomes negative: the replica is probed on every Probe call.
func TestReviewOutlierLongOutageBackoff(t *testing.T) {
	for _, cfg := range []OutlierConfig{{}, {BaseEjection: time.Minute, MaxEjection: time.Hour}, {BaseEjection: time.Hour, MaxEjection: 24 * time.Hour}} {
		cfg.Rand = rand.New(rand.NewPCG(1, 2))
		o := NewOutlier(cfg)
		rs := rvReplicas(0, 0, 0, 0)
		o.SetReplicas(rs)
		r := rs[0]
		now := rvT0
		for range 5 {
			o.Observe(r, rvFail(), now)
		}
		base, max := cfg.BaseEjection, cfg.MaxEjection
		if base == 0 {
			base, max = time.Second, 30*time.Second
		}
		want := base
		for k := 1; k <= 40; k++ {
			lo := time.Duration(float64(want) * 0.8)
			if p := o.Probe(now.Add(lo - time.Millisecond)); p != nil {
				t.Errorf("base %v max %v: ejection %d (due %v..%v) probed after %v", base, max, k, lo, want, lo-time.Millisecond)
				break
			}
			if p := o.Probe(now.Add(want)); p != r {
				t.Fatalf("ejection %d: not probed after %v", k, want)
			}
			now = now.Add(want)
			o.ObserveProbe(r, rvFail(), now)
			want = min(2*want, max)
		}
	}
}

// Promise 5: a resolver listing the same replica twice (duplicate
// pointers in SetReplicas) must not let more than half the distinct
// replicas out.
func TestReviewOutlierDuplicateReplicasCap(t *testing.T) {
	rs := rvReplicas(0, 0, 0)
	o := NewOutlier(OutlierConfig{Rand: rand.New(rand.NewPCG(3, 3))})
	o.SetReplicas([]*Replica{rs[0], rs[0], rs[1], rs[2]})
	for _, r := range rs {
		for range 5 {
			o.Observe(r, rvFail(), rvT0)
		}
	}
	if n := rvOut(o, rs); n > 1 {
		t.Errorf("3 distinct replicas (one listed twice): %d out (cap floor(1.5)=1)", n)
	}
}

// Promise 5: SetReplicas "forgets the others". A replica that failed 4
// times, left the set (resolver flap) and came back must need 5 new
// failures, not 1.
func TestReviewOutlierForgetsRemovedFailures(t *testing.T) {
	o, rs := rvOutlier(4, 12)
	r := rs[0]
	for range 4 {
		o.Observe(r, rvFail(), rvT0)
	}
	o.SetReplicas(rs[1:])
	o.SetReplicas(rs)
	if o.Observe(r, rvFail(), rvT0.Add(time.Minute)) {
		t.Errorf("after leaving and rejoining the set, one failure a minute later ejected the replica: its 4 old failures were not forgotten")
	}
}

// Promise 5: the ejection count restarts after MaxEjection of service, and
// not before.
func TestReviewOutlierCountRestart(t *testing.T) {
	for _, served := range []time.Duration{29 * time.Second, 31 * time.Second} {
		o, rs := rvOutlier(4, 13)
		r := rs[0]
		now := rvT0
		for range 5 {
			o.Observe(r, rvFail(), now)
		}
		now = now.Add(time.Second)
		if o.Probe(now) != r || !o.ObserveProbe(r, rvOK(), now) {
			t.Fatal("first probe")
		}
		now = now.Add(served)
		for range 5 {
			o.Observe(r, rvFail(), now)
		}
		want := 2 * time.Second
		if served >= 30*time.Second {
			want = time.Second
		}
		if p := o.Probe(now.Add(want*8/10 - time.Millisecond)); p != nil {
			t.Errorf("served %v: probed before %v", served, want*8/10)
		}
		if p := o.Probe(now.Add(want)); p != r {
			t.Errorf("served %v: not probed after %v", served, want)
		}
	}
}

// Promise 5 under -race: every method at once, with the set changing.
func TestReviewOutlierRaceAll(t *testing.T) {
	o, rs := rvOutlier(8, 14)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(g), 5))
			now := rvT0
			for range 5000 {
				now = now.Add(time.Duration(rnd.IntN(50)) * time.Millisecond)
				r := rs[rnd.IntN(len(rs))]
				switch rnd.IntN(5) {
				case 0, 1:
					d := rvFail()
					if rnd.IntN(4) == 0 {
						d = rvOK()
					}
					o.Observe(r, d, now)
				case 2:
					if p := o.Probe(now); p != nil {
						d := rvOK()
						if rnd.IntN(2) == 0 {
							d = rvFail()
						}
						o.ObserveProbe(p, d, now)
					}
				case 3:
					o.Sweep(now)
				case 4:
					_ = o.Status(r)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		o.SetReplicas(rs)
	}
	if n := rvOut(o, rs); n > 4 {
		t.Errorf("8 replicas: %d out at the end (cap 4)", n)
	}
}

// Promise 5 with a huge forward time jump (a fake clock, or a host clock
// set far ahead): an ejected replica's backoff has long passed, so Probe
// must hand it out. Probe's lock-free test compares UnixNano, which wraps
// past 2262.
func TestReviewOutlierHugeTimeJump(t *testing.T) {
	for _, jump := range []time.Duration{24 * time.Hour, 100 * 365 * 24 * time.Hour, 250 * 365 * 24 * time.Hour, 290 * 365 * 24 * time.Hour} {
		o, rs := rvOutlier(4, 15)
		for range 5 {
			o.Observe(rs[0], rvFail(), rvT0)
		}
		if p := o.Probe(rvT0.Add(jump)); p != rs[0] {
			t.Errorf("ejected at %v, Probe at %v (+%v) gives %v", rvT0.Format("2006-01-02"), rvT0.Add(jump).Format("2006-01-02"), jump, p)
		}
	}
}
