package balancer

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func pickCounts(b Balancer, n int) map[*Replica]int {
	got := map[*Replica]int{}
	for range n {
		got[b.Pick(PickInfo{})]++
	}
	return got
}

func TestP2CEmptyAndSingle(t *testing.T) {
	b := P2C()
	if r := b.Pick(PickInfo{}); r != nil {
		t.Fatalf("pick before Update: %v", r)
	}
	b.Update(nil)
	if r := b.Pick(PickInfo{}); r != nil {
		t.Fatalf("pick from no replicas: %v", r)
	}
	rs := newReplicas(1)
	b.Update(rs)
	rs[0].State.InFlight.Store(1000)
	for range 100 {
		if r := b.Pick(PickInfo{}); r != rs[0] {
			t.Fatalf("single replica: picked %v", r)
		}
	}
}

// TestP2CPrefersLessLoaded: with equal latency, the replica with fewer
// calls in flight wins every pair it is in, but for a retry once its idle
// discount outweighs its 6× cost (every ~idleHalfLife·log2(6/1.25)
// picks: its stuck calls never end here).
func TestP2CPrefersLessLoaded(t *testing.T) {
	rs := newReplicas(2)
	for _, r := range rs {
		r.State.ObserveLatency(time.Millisecond)
	}
	rs[0].State.InFlight.Store(5)
	b := P2C()
	b.Update(rs)
	const n = 100000
	got := pickCounts(b, n)
	want := 1 / (idleHalfLife * math.Log2(6/alikeRatio))
	if loaded := float64(got[rs[0]]) / n; loaded > 1.5*want {
		t.Fatalf("loaded replica got %.4f of picks, want about %.4f", loaded, want)
	}
	if got[rs[0]] == 0 {
		t.Fatalf("no retry of the loaded replica in %d picks", n)
	}
}

// TestP2CPrefersFaster: with equal load, the faster replica wins.
func TestP2CPrefersFaster(t *testing.T) {
	rs := newReplicas(3)
	rs[0].State.ObserveLatency(2 * time.Millisecond)
	rs[1].State.ObserveLatency(time.Millisecond)
	rs[2].State.ObserveLatency(time.Millisecond)
	b := P2C()
	b.Update(rs)
	const n = 100000
	got := pickCounts(b, n)
	// rs[0] is in 2/3 of the pairs and loses all but a retry when its
	// idle discount brings it within alikeRatio of the others.
	want := 1 / (idleHalfLife * math.Log2(2/alikeRatio))
	if slow := float64(got[rs[0]]) / n; slow > 1.5*want {
		t.Fatalf("slower replica got %.4f of picks, want about %.4f", slow, want)
	}
}

// TestP2CWeights: on an idle fleet with equal latency, shares follow the
// weights (the pair is drawn by weight; a tie keeps the first drawn).
func TestP2CWeights(t *testing.T) {
	rs := newReplicas(4, 1, 1, 2, 4)
	b := P2C()
	b.Update(rs)
	const n = 200000
	got := pickCounts(b, n)
	for _, r := range rs {
		want := float64(r.Weight) / 8
		if s := float64(got[r]) / n; s < want*0.9 || s > want*1.1 {
			t.Errorf("%s weight %d: share %.3f, want %.3f", r.Addr, r.Weight, s, want)
		}
	}
}

// TestP2CNewReplicaTakesLoadAtOnce is the add scenario on a fake
// clock: a fifth replica, without a latency sample, serves >= 15 % of
// the calls in the first 100 ms after it appears.
func TestP2CNewReplicaTakesLoadAtOnce(t *testing.T) {
	for seed := range uint64(20) {
		rs := newReplicas(5)
		b := P2C()
		b.Update(rs[:4])
		sim := newFleetSim(b, seed, 250*time.Microsecond, func(*Replica) time.Duration { return time.Millisecond })
		sim.run(time.Second)
		b.Update(rs)
		got := sim.run(100 * time.Millisecond)
		if s := share(got, rs[4]); s < 0.15 {
			t.Fatalf("seed %d: new replica served %.3f of calls in its first 100 ms", seed, s)
		}
	}
}

// TestP2CSlowReplicaShare is the slow scenario: one replica of
// four 10x slower gets a small share, and the p99 stays near the fast
// replicas' latency.
func TestP2CSlowReplicaShare(t *testing.T) {
	var worst float64
	for seed := range uint64(20) {
		rs := newReplicas(4)
		b := P2C()
		b.Update(rs)
		service := func(r *Replica) time.Duration {
			if r == rs[0] {
				return 10 * time.Millisecond
			}
			return time.Millisecond
		}
		sim := newFleetSim(b, seed, 250*time.Microsecond, service)
		sim.run(2 * time.Second)
		worst = max(worst, share(sim.picks, rs[0]))
	}
	t.Logf("slow replica's share (worst of 20 seeds, 4 replicas, ~1 call in flight each): %.4f", worst)
	if worst > 0.02 {
		t.Fatalf("slow replica served %.4f of calls", worst)
	}
}

// TestP2CDoneRecords: Done records latency, skips never-ran calls, and
// counts a failure as at least twice the average.
func TestP2CDoneRecords(t *testing.T) {
	rs := newReplicas(1)
	b := P2C()
	b.Update(rs)
	r := rs[0]
	b.Done(r, DoneInfo{Latency: time.Millisecond})
	b.Done(r, DoneInfo{Latency: time.Hour, Err: errors.New("x"), NeverRan: true})
	if got := r.State.Latency(); got != time.Millisecond {
		t.Fatalf("after a never-ran call: latency %v", got)
	}
	b.Done(r, DoneInfo{Latency: time.Microsecond, Err: errors.New("x")})
	if got := r.State.Latency(); got <= time.Millisecond {
		t.Fatalf("a fast failure lowered the average to %v", got)
	}
}

func p99(lats []time.Duration) time.Duration {
	s := slices.Clone(lats)
	slices.Sort(s)
	return s[len(s)*99/100]
}

// TestSlowScenarioP99 is the slow scenario on the fake-clock
// fleet (4 replicas, service times uniform in 0.5..1.5 ms, one replica 10x
// slower, ~1 call in flight each): P2C's p99 stays within 1.5x of the
// all-healthy p99; round robin's, beside it, does not.
func TestSlowScenarioP99(t *testing.T) {
	run := func(b Balancer, slow bool, seed uint64) time.Duration {
		rs := newReplicas(4)
		b.Update(rs)
		rnd := rand.New(rand.NewPCG(seed, 8))
		service := func(r *Replica) time.Duration {
			d := time.Duration((0.5 + rnd.Float64()) * float64(time.Millisecond))
			if slow && r == rs[0] {
				d *= 10
			}
			return d
		}
		sim := newFleetSim(b, seed, 250*time.Microsecond, service)
		sim.run(2 * time.Second)
		return p99(sim.lats)
	}
	var healthy, p2c, rr time.Duration
	for seed := range uint64(10) {
		healthy = max(healthy, run(P2C(), false, seed))
		p2c = max(p2c, run(P2C(), true, seed))
		rr = max(rr, run(RoundRobin(), true, seed))
	}
	t.Logf("p99 (worst of 10 seeds): all healthy %v, one 10x slow: P2C %v, round robin %v", healthy, p2c, rr)
	if float64(p2c) > 1.5*float64(healthy) {
		t.Fatalf("P2C p99 %v over 1.5x the healthy %v", p2c, healthy)
	}
}
