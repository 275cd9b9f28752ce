package balancer

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func countOut(o *Outlier, rs []*Replica) int {
	out := 0
	for _, r := range rs {
		if o.Status(r) != Serving {
			out++
		}
	}
	return out
}

// TestOutlierCap: with every replica failing, at most half are out; a
// lone replica is never ejected; a capped replica is ejected by its next
// failure once a slot frees.
func TestOutlierCap(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7} {
		rs := newReplicas(n)
		o := newOutlier(rs, 5)
		for range 10 {
			for _, r := range rs {
				o.Observe(r, failed(), t0)
			}
		}
		if out, limit := countOut(o, rs), n/2; out != limit {
			t.Fatalf("%d replicas all failing: %d out, want %d", n, out, limit)
		}
	}
	rs := newReplicas(2)
	o := newOutlier(rs, 6)
	for range 5 {
		o.Observe(rs[0], failed(), t0)
		o.Observe(rs[1], failed(), t0)
	}
	now := t0.Add(time.Second)
	o.Probe(now)
	o.ObserveProbe(rs[0], ok(), now)
	if !o.Observe(rs[1], failed(), now) || o.Status(rs[1]) != Ejected {
		t.Fatal("the capped replica was not ejected once its slot freed")
	}
}

// TestOutlierLatency: Sweep ejects a replica over 3× the others' median
// once it has 20 samples, spares one at 2×, and needs two others judged.
func TestOutlierLatency(t *testing.T) {
	rs := newReplicas(5)
	o := newOutlier(rs, 7)
	feed := func(r *Replica, lat time.Duration, n int) {
		for range n {
			r.State.ObserveLatency(lat)
		}
	}
	feed(rs[0], 10*time.Millisecond, 19)
	feed(rs[1], time.Millisecond, 30)
	feed(rs[2], time.Millisecond, 30)
	if o.Sweep(t0) {
		t.Fatal("ejected with too few samples / too few judged")
	}
	feed(rs[0], 10*time.Millisecond, 1)
	feed(rs[3], 2*time.Millisecond, 30)
	feed(rs[4], 1100*time.Microsecond, 30)
	if !o.Sweep(t0) || o.Status(rs[0]) != Ejected {
		t.Fatal("10x replica not ejected")
	}
	for _, r := range rs[1:] {
		if o.Status(r) != Serving {
			t.Fatalf("%s ejected", r.Addr)
		}
	}
	// Back after a good probe, it is judged on fresh samples only.
	now := t0.Add(time.Second)
	o.Probe(now)
	o.ObserveProbe(rs[0], ok(), now)
	if o.Sweep(now) || o.Status(rs[0]) != Serving {
		t.Fatal("re-ejected on its old average")
	}
}

// TestOutlierRandomized drives the detector with random calls, probes,
// sweeps and clock steps, checking after each step that no more than half
// the replicas are out and that Status and the probe gate agree.
func TestOutlierRandomized(t *testing.T) {
	ejections := 0
	for seed := range uint64(50) {
		rnd := rand.New(rand.NewPCG(seed, 11))
		n := 1 + rnd.IntN(9)
		rs := newReplicas(n)
		o := newOutlier(rs, seed)
		// Replicas fail with their own probability, some almost always.
		failP := make([]float64, n)
		for i := range failP {
			failP[i] = []float64{0, 0.1, 0.9, 1}[rnd.IntN(4)]
		}
		now := t0
		probing := map[*Replica]bool{}
		for range 3000 {
			switch k := rnd.IntN(20); {
			case k < 14:
				i := rnd.IntN(n)
				d := ok()
				if rnd.Float64() < failP[i] {
					d = []DoneInfo{failed(), neverRan()}[rnd.IntN(2)]
				}
				if o.Observe(rs[i], d, now) {
					ejections++
				}
			case k < 16:
				if p := o.Probe(now); p != nil {
					if probing[p] {
						t.Fatalf("seed %d: %s probed twice", seed, p.Addr)
					}
					probing[p] = true
				}
			case k < 18:
				for p := range probing {
					d := ok()
					if rnd.Float64() < failP[indexOf(rs, p)] {
						d = failed()
					}
					o.ObserveProbe(p, d, now)
					delete(probing, p)
					break
				}
			case k < 19:
				o.Sweep(now)
				for p := range probing {
					if o.Status(p) == Ejected { // probe given up
						delete(probing, p)
					}
				}
			default:
				now = now.Add(time.Duration(rnd.IntN(3000)) * time.Millisecond)
			}
			if out := countOut(o, rs); out > n/2 {
				t.Fatalf("seed %d: %d of %d out", seed, out, n)
			}
			for _, r := range rs {
				if (o.Status(r) == Probing) != probing[r] {
					t.Fatalf("seed %d: %s status %v, probe out %v", seed, r.Addr, o.Status(r), probing[r])
				}
			}
		}
	}
	if ejections == 0 {
		t.Fatal("no ejection in any run")
	}
	t.Logf("%d ejections by failures", ejections)
}

func indexOf(rs []*Replica, r *Replica) int {
	for i, x := range rs {
		if x == r {
			return i
		}
	}
	return -1
}

// TestOutlierConcurrent: calls end on many goroutines while others probe
// and sweep (run it under -race); the cap holds throughout.
func TestOutlierConcurrent(t *testing.T) {
	rs := newReplicas(6)
	o := newOutlier(rs, 12)
	var clock, ejections atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				now := t0.Add(time.Duration(clock.Add(1)) * time.Millisecond)
				r := rs[(g+i)%len(rs)]
				d := ok()
				if r == rs[0] || r == rs[1] || i%7 == 0 {
					d = failed()
				}
				if o.Observe(r, d, now) {
					ejections.Add(1)
				}
				if p := o.Probe(now); p != nil {
					o.ObserveProbe(p, d, now)
				}
			}
		}()
	}
	go func() {
		defer close(done)
		for range 200 {
			o.Sweep(t0.Add(time.Duration(clock.Load()) * time.Millisecond))
			if out := countOut(o, rs); out > 3 {
				t.Errorf("%d of 6 out", out)
				return
			}
		}
	}()
	wg.Wait()
	<-done
	if ejections.Load() == 0 {
		t.Fatal("no ejection")
	}
}
