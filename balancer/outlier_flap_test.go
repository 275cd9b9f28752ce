package balancer

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// ejectOne fails r until the detector ejects it at now (a first
// ejection: due after 1 s less up to 20 % jitter).
func ejectOne(t *testing.T, o *Outlier, r *Replica, now time.Time) {
	t.Helper()
	for range 5 {
		o.Observe(r, failed(), now)
	}
	if o.Status(r) != Ejected {
		t.Fatalf("setup: %s not ejected (%v)", r.Addr, o.Status(r))
	}
}

// TestOutlierFlapKeepsEjection: a resolver flap (the replica leaves the
// set and comes back, as the same Replica or as a new one with its Addr)
// does not bring an ejected replica back unprobed, nor reset its backoff:
// it stays ejected until its backoff has passed, then a probe is due,
// and a failed probe ejects it for the doubled time.
func TestOutlierFlapKeepsEjection(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		for seed := range uint64(20) {
			rs := newReplicas(4)
			o := NewOutlier(OutlierConfig{Rand: rand.New(rand.NewPCG(seed, 9))})
			o.SetReplicas(rs)
			r := rs[0]
			ejectOne(t, o, r, t0)
			o.SetReplicas(rs[1:])
			back := r
			if fresh {
				back = &Replica{Addr: r.Addr}
			}
			o.SetReplicas(append([]*Replica{back}, rs[1:]...))
			if o.Status(back) != Ejected {
				t.Fatalf("fresh %v seed %d: back after a flap with status %v, want Ejected", fresh, seed, o.Status(back))
			}
			if p := o.Probe(t0.Add(790 * time.Millisecond)); p != nil {
				t.Fatalf("fresh %v seed %d: probed %s before its 1 s backoff (less 20 %%) passed", fresh, seed, p.Addr)
			}
			now := t0.Add(time.Second)
			if p := o.Probe(now); p != back {
				t.Fatalf("fresh %v seed %d: Probe after the backoff gives %v", fresh, seed, p)
			}
			o.ObserveProbe(back, failed(), now)
			// The second ejection lasts 2 s less up to 20 %: the count survived the flap.
			if p := o.Probe(now.Add(1590 * time.Millisecond)); p != nil {
				t.Fatalf("fresh %v seed %d: second ejection shorter than 1.6 s: the flap reset the backoff", fresh, seed)
			}
			if p := o.Probe(now.Add(2 * time.Second)); p != back {
				t.Fatalf("fresh %v seed %d: not probed 2 s after the second ejection", fresh, seed)
			}
		}
	}
}

// TestOutlierFlapForgottenAfterMaxEjection: a replica gone for longer
// than MaxEjection (seen by a Sweep) comes back serving, judged afresh.
func TestOutlierFlapForgottenAfterMaxEjection(t *testing.T) {
	rs := newReplicas(4)
	o := newOutlier(rs, 21)
	r := rs[0]
	ejectOne(t, o, r, t0)
	o.SetReplicas(rs[1:])
	o.Sweep(t0.Add(29 * time.Second))
	o.SetReplicas(rs)
	if o.Status(r) != Ejected {
		t.Fatalf("back 29 s after leaving (MaxEjection 30 s): status %v, want Ejected", o.Status(r))
	}
	o.SetReplicas(rs[1:])
	o.Sweep(t0.Add(40 * time.Second)) // removal stamped at 29 s
	o.Sweep(t0.Add(60 * time.Second))
	o.SetReplicas(rs)
	if o.Status(r) != Serving {
		t.Fatalf("back 31 s after leaving: status %v, want Serving", o.Status(r))
	}
	if len(o.gone) != 0 {
		t.Fatalf("%d removed replicas still remembered", len(o.gone))
	}
}

// TestOutlierLoneReplicaFullFraction: even with MaxEjectedFraction 1, a
// lone replica is never ejected, and of two at most one is out.
func TestOutlierLoneReplicaFullFraction(t *testing.T) {
	for n := 1; n <= 3; n++ {
		rs := newReplicas(n)
		o := NewOutlier(OutlierConfig{MaxEjectedFraction: 1})
		o.SetReplicas(rs)
		for range 10 {
			for _, r := range rs {
				o.Observe(r, failed(), t0)
			}
		}
		if out := countOut(o, rs); out != n-1 {
			t.Errorf("%d replicas all failing, fraction 1: %d out, want %d", n, out, n-1)
		}
	}
}

// TestOutlierNaNConfig: NaN (or infinite) float settings take the
// defaults: with every replica failing half are out, each first ejection
// lasts 0.8 s to 1 s, and a replica at 3.5× the others' latency is
// ejected by Sweep.
func TestOutlierNaNConfig(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, cfg := range []OutlierConfig{
		{LatencyFactor: nan, Jitter: nan, MaxEjectedFraction: nan},
		{LatencyFactor: inf, Jitter: inf, MaxEjectedFraction: inf},
	} {
		for seed := range uint64(10) {
			cfg.Rand = rand.New(rand.NewPCG(seed, 1))
			rs := newReplicas(4)
			o := NewOutlier(cfg)
			o.SetReplicas(rs)
			for range 5 {
				for _, r := range rs {
					o.Observe(r, failed(), t0)
				}
			}
			if out := countOut(o, rs); out != 2 {
				t.Fatalf("%+v: 4 replicas all failing: %d out, want 2", cfg, out)
			}
			if p := o.Probe(t0.Add(790 * time.Millisecond)); p != nil {
				t.Fatalf("%+v: probe due before 0.8 s", cfg)
			}
			if p := o.Probe(t0.Add(time.Second)); p == nil {
				t.Fatalf("%+v: no probe due after 1 s", cfg)
			}
		}
		rs := newReplicas(5)
		o := NewOutlier(cfg)
		o.SetReplicas(rs)
		for i, r := range rs {
			lat := 10 * time.Millisecond
			if i == 0 {
				lat = 35 * time.Millisecond
			}
			for range 30 {
				r.State.ObserveLatency(lat)
			}
		}
		if o.Sweep(t0); o.Status(rs[0]) != Ejected {
			t.Fatalf("%+v: a replica at 3.5x the others' latency was not ejected", cfg)
		}
	}
}
