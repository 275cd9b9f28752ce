package balancer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func rvReplicas(weights ...uint32) []*Replica {
	rs := make([]*Replica, len(weights))
	for i, w := range weights {
		rs[i] = &Replica{Addr: fmt.Sprintf("10.0.%d.%d:7000", i/256, i%256), Weight: w}
	}
	return rs
}

func rvCounts(b Balancer, n int, info PickInfo) map[*Replica]int {
	got := map[*Replica]int{}
	for range n {
		got[b.Pick(info)]++
	}
	return got
}

// Promise 1: no allocation on Pick and Done, for every built-in, keyed or not,
// on success and failure.
func TestReviewPickDoneNoAllocs(t *testing.T) {
	for _, mk := range []struct {
		name string
		b    func() Balancer
	}{{"p2c", P2C}, {"rr", RoundRobin}, {"hash", Hash}} {
		b := mk.b()
		b.Update(rvReplicas(1, 2, 3, 0, 5))
		for _, info := range []PickInfo{{}, {Key: "user-42", HasKey: true}, {Method: "m", Key: "", HasKey: true}} {
			for _, d := range []DoneInfo{{Latency: time.Millisecond}, {Latency: time.Millisecond, Err: errRv}, {Err: errRv, NeverRan: true}} {
				a := testing.AllocsPerRun(200, func() {
					r := b.Pick(info)
					r.State.InFlight.Add(1)
					r.State.InFlight.Add(-1)
					b.Done(r, d)
				})
				if a != 0 {
					t.Errorf("%s: Pick+Done(%+v, %+v) allocates %.1f", mk.name, info, d, a)
				}
			}
		}
	}
}

type rvErr struct{}

func (rvErr) Error() string { return "down" }

var errRv error = rvErr{}

// Promise 1: concurrent Update (including Update to empty, to one replica,
// duplicate pointers, weights 0 and MaxUint32) with Pick and Done, including
// Done on replicas no longer in the set. Run under -race.
func TestReviewConcurrentUpdateHostileSets(t *testing.T) {
	pool := rvReplicas(0, 1, math.MaxUint32, 7, 3, 1)
	sets := [][]*Replica{
		nil,
		{},
		{pool[0]},
		{pool[1], pool[1], pool[1]},
		{pool[0], pool[2]},
		pool,
		{pool[2], pool[2]},
	}
	for _, mk := range []struct {
		name string
		b    func() Balancer
	}{{"p2c", P2C}, {"rr", RoundRobin}} {
		b := mk.b()
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(uint64(g), 1))
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					r := b.Pick(PickInfo{Key: fmt.Sprint(i % 17), HasKey: i%2 == 0})
					if r == nil {
						continue
					}
					r.State.InFlight.Add(1)
					r.State.InFlight.Add(-1)
					b.Done(r, DoneInfo{Latency: time.Duration(rnd.IntN(1000)) * time.Microsecond})
					// Done on a replica that may be out of the set.
					b.Done(pool[rnd.IntN(len(pool))], DoneInfo{Latency: time.Millisecond})
				}
			}()
		}
		for i := range 300 {
			b.Update(sets[i%len(sets)])
		}
		close(stop)
		wg.Wait()
		b.Update(sets[2])
		if r := b.Pick(PickInfo{}); r != pool[0] {
			t.Errorf("%s: single-replica set picks %v", mk.name, r)
		}
		b.Update(nil)
		if r := b.Pick(PickInfo{}); r != nil {
			t.Errorf("%s: empty set picks %v", mk.name, r)
		}
	}
}

// Promise 2 (respects weights, 0 counts as 1): with equal cost a replica
// of weight 3 should take about 3x the picks of a weight-1 replica.
func TestReviewP2CWeightsTwoReplicas(t *testing.T) {
	b := P2C()
	rs := rvReplicas(1, 3)
	for _, r := range rs {
		r.State.ObserveLatency(time.Millisecond)
	}
	b.Update(rs)
	got := rvCounts(b, 40000, PickInfo{})
	ratio := float64(got[rs[1]]) / float64(got[rs[0]])
	if ratio < 2 || ratio > 4.5 {
		t.Errorf("weights 1,3 at equal cost: picks %d vs %d (ratio %.2f, want ~3)", got[rs[0]], got[rs[1]], ratio)
	}
}

// Promise 2: weight 0 counts as 1, MaxUint32 weights do not overflow.
func TestReviewP2CExtremeWeights(t *testing.T) {
	b := P2C()
	rs := rvReplicas(math.MaxUint32, math.MaxUint32, 1, 0)
	for _, r := range rs {
		r.State.ObserveLatency(time.Millisecond)
	}
	b.Update(rs)
	got := rvCounts(b, 40000, PickInfo{})
	// the two tiny replicas are drawn with probability ~2^-31: they should
	// get essentially nothing.
	if got[rs[2]]+got[rs[3]] > 10 {
		t.Errorf("weights MaxUint32,MaxUint32,1,0: tiny replicas took %d and %d of 40000", got[rs[2]], got[rs[3]])
	}
	if got[nil] != 0 {
		t.Errorf("nil picks: %d", got[nil])
	}
}

// Promise 2: a failed call counts as at least twice r's average, and a
// huge/negative/zero latency must not make a replica the cheapest.
func TestReviewP2CLatencyOverflow(t *testing.T) {
	b := P2C()
	rs := rvReplicas(1, 1, 1)
	b.Update(rs)
	for _, r := range rs {
		b.Done(r, DoneInfo{Latency: time.Millisecond})
	}
	// Replica 0 becomes enormously slow, then fails.
	b.Done(rs[0], DoneInfo{Latency: math.MaxInt64})
	b.Done(rs[0], DoneInfo{Latency: math.MaxInt64, Err: errRv})
	if l := rs[0].State.Latency(); l <= time.Millisecond {
		t.Errorf("after MaxInt64 latencies and a failure, average is %v", l)
	}
	got := rvCounts(b, 3000, PickInfo{})
	if got[rs[0]] > 300 {
		t.Errorf("replica with latency ~MaxInt64 took %d of 3000 picks", got[rs[0]])
	}
}

func TestReviewP2CNegativeLatency(t *testing.T) {
	b := P2C()
	rs := rvReplicas(1, 1, 1)
	b.Update(rs)
	for _, r := range rs {
		for range 10 {
			b.Done(r, DoneInfo{Latency: 10 * time.Millisecond})
		}
	}
	// A clock that stepped backwards gives one call a negative latency.
	b.Done(rs[0], DoneInfo{Latency: -time.Hour})
	if l := rs[0].State.Latency(); l < 0 {
		t.Errorf("negative average latency %v after one negative sample", l)
	}
	// replica 0 loaded with 50 calls in flight must not still win.
	rs[0].State.InFlight.Store(50)
	got := rvCounts(b, 3000, PickInfo{})
	if got[rs[0]] > 1500 {
		t.Errorf("replica with 50 in flight and a negative sample took %d of 3000", got[rs[0]])
	}
}

// Promise 3: RoundRobin follows nginx's smooth weighted order exactly.
func rvSmooth(ws []int, n int) []int {
	cur := make([]int, len(ws))
	total := 0
	for _, w := range ws {
		total += w
	}
	out := make([]int, 0, n)
	for range n {
		best := -1
		for i, w := range ws {
			cur[i] += w
			if best < 0 || cur[i] > cur[best] {
				best = i
			}
		}
		cur[best] -= total
		out = append(out, best)
	}
	return out
}

func rvGCD(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func TestReviewRoundRobinExactOrder(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 7))
	for trial := range 300 {
		n := 1 + rnd.IntN(8)
		ws := make([]uint32, n)
		iw := make([]int, n)
		g := 0
		for i := range ws {
			ws[i] = uint32(rnd.IntN(20))
			iw[i] = int(ws[i])
			if iw[i] == 0 {
				iw[i] = 1
			}
			g = rvGCD(g, iw[i])
		}
		total := 0
		for i := range iw {
			iw[i] /= g
			total += iw[i]
		}
		rs := rvReplicas(ws...)
		b := RoundRobin()
		b.Update(rs)
		// find the start of the cycle: the counter may not start at 0, so
		// compare two full cycles against every rotation of the reference.
		got := make([]int, 2*total)
		idx := map[*Replica]int{}
		for i, r := range rs {
			idx[r] = i
		}
		for i := range got {
			got[i] = idx[b.Pick(PickInfo{})]
		}
		want := rvSmooth(iw, total)
		okRot := false
		for s := range total {
			match := true
			for i := range got {
				if got[i] != want[(s+i)%total] {
					match = false
					break
				}
			}
			if match {
				okRot = true
				break
			}
		}
		if !okRot {
			t.Fatalf("trial %d weights %v: got %v, want a rotation of %v", trial, ws, got[:total], want)
		}
	}
}

// Promise 3 with large weights: a 2^32-1 weight must not overflow the sum.
func TestReviewRoundRobinHugeWeights(t *testing.T) {
	rs := rvReplicas(math.MaxUint32, 1, 2)
	b := RoundRobin()
	b.Update(rs)
	got := rvCounts(b, 4096*3, PickInfo{})
	if got[rs[0]] < 4096*3-10 || got[rs[1]] == 0 || got[rs[2]] == 0 {
		t.Errorf("weights MaxUint32,1,2 over 3 cycles: %d %d %d", got[rs[0]], got[rs[1]], got[rs[2]])
	}
	rs2 := rvReplicas(math.MaxUint32, math.MaxUint32)
	b.Update(rs2)
	got = rvCounts(b, 1000, PickInfo{})
	if d := got[rs2[0]] - got[rs2[1]]; d < -1 || d > 1 {
		t.Errorf("weights MaxUint32,MaxUint32: %d vs %d", got[rs2[0]], got[rs2[1]])
	}
}

// Promise 4: ring independent of Update order; removal/addition move only
// the keys they must; under random addresses and weights, including
// duplicate addresses.
func rvOwners(b Balancer, keys []string) []*Replica {
	out := make([]*Replica, len(keys))
	for i, k := range keys {
		out[i] = b.Pick(PickInfo{Key: k, HasKey: true})
	}
	return out
}

func TestReviewHashOrderIndependentAndMinimalMoves(t *testing.T) {
	rvHashOrder(t, false)
}

// Duplicate addresses (a resolver listing one host twice, or two ports
// collapsed) put two replicas' points on the same ring positions.
func TestReviewHashDuplicateAddrOrder(t *testing.T) {
	rvHashOrder(t, true)
}

func rvHashOrder(t *testing.T, dups bool) {
	rnd := rand.New(rand.NewPCG(11, 3))
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d-%d", i, rnd.Uint64())
	}
	for trial := range 20 {
		n := 2 + rnd.IntN(40)
		rs := make([]*Replica, n)
		for i := range rs {
			rs[i] = &Replica{Addr: fmt.Sprintf("h%d.svc:%d", i, 1000+rnd.IntN(9)), Weight: uint32(rnd.IntN(4))}
			if dups && i > 0 && rnd.IntN(4) == 0 {
				rs[i].Addr = rs[rnd.IntN(i)].Addr
			}
		}
		a, b := Hash(), Hash()
		a.Update(append([]*Replica(nil), rs...))
		perm := append([]*Replica(nil), rs...)
		rnd.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		b.Update(perm)
		oa, ob := rvOwners(a, keys), rvOwners(b, keys)
		for i := range keys {
			if oa[i] != ob[i] {
				t.Fatalf("trial %d: key %q goes to %s/%p or %s/%p depending on Update order", trial, keys[i], oa[i].Addr, oa[i], ob[i].Addr, ob[i])
			}
		}
		// remove one
		k := rnd.IntN(n)
		rest := append(append([]*Replica(nil), rs[:k]...), rs[k+1:]...)
		a.Update(rest)
		oc := rvOwners(a, keys)
		for i := range keys {
			if oa[i] != rs[k] && oc[i] != oa[i] {
				t.Fatalf("trial %d: removing %s moved key %q from %s to %s", trial, rs[k].Addr, keys[i], oa[i].Addr, oc[i].Addr)
			}
		}
		// add it back (at the front)
		a.Update(append([]*Replica{rs[k]}, rest...))
		od := rvOwners(a, keys)
		for i := range keys {
			if od[i] != oc[i] && od[i] != rs[k] {
				t.Fatalf("trial %d: adding %s moved key %q from %s to %s", trial, rs[k].Addr, keys[i], oc[i].Addr, od[i].Addr)
			}
		}
	}
}

// Promise 4 with an extreme weight: the ring must stay bounded (160 points
// per unit of weight would be 687e9 points for 2^32-1).
func TestReviewHashHugeWeight(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		b := Hash()
		b.Update(rvReplicas(math.MaxUint32, 1))
		if b.Pick(PickInfo{Key: "x", HasKey: true}) == nil {
			panic("nil pick")
		}
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("Update with weight 2^32-1 panicked: %v", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Update with weight 2^32-1 did not finish in 20 s")
	}
}

// Promise 4 on a big fleet: past 2^18 ring points (total weight over 1638,
// e.g. 40 replicas of weight 50) every replica's point count is scaled by
// the total, so removing or adding one replica changes the others' points
// and moves keys between replicas that did not change.
func TestReviewHashBigFleetMinimalMoves(t *testing.T) {
	rnd := rand.New(rand.NewPCG(21, 4))
	keys := make([]string, 5000)
	for i := range keys {
		keys[i] = fmt.Sprintf("session-%d", rnd.Uint64())
	}
	ws := make([]uint32, 40)
	for i := range ws {
		ws[i] = 50
	}
	rs := rvReplicas(ws...)
	b := Hash()
	b.Update(rs)
	before := rvOwners(b, keys)
	gone := rs[7]
	rest := append(append([]*Replica(nil), rs[:7]...), rs[8:]...)
	b.Update(rest)
	after := rvOwners(b, keys)
	moved := 0
	for i := range keys {
		if before[i] != gone && after[i] != before[i] {
			moved++
		}
	}
	if moved > 0 {
		t.Errorf("removing 1 of 40 replicas (weight 50 each) moved %d of %d keys between replicas that stayed", moved, len(keys))
	}
	b.Update(rs)
	again := rvOwners(b, keys)
	moved = 0
	for i := range keys {
		if again[i] != after[i] && again[i] != gone {
			moved++
		}
	}
	if moved > 0 {
		t.Errorf("adding it back moved %d keys to replicas other than the new one", moved)
	}
}

// Promise 2 (hostile): a first latency sample of MaxInt64 (a call whose
// start time was never set) makes Latency() negative, and the replica the
// cheapest.
func TestReviewP2CHugeFirstSample(t *testing.T) {
	b := P2C()
	rs := rvReplicas(1, 1, 1)
	for _, r := range rs[1:] {
		r.State.ObserveLatency(time.Millisecond)
	}
	b.Update(rs)
	b.Done(rs[0], DoneInfo{Latency: math.MaxInt64})
	if l := rs[0].State.Latency(); l < time.Millisecond {
		t.Errorf("after one MaxInt64 sample Latency() = %v", l)
	}
	got := rvCounts(b, 3000, PickInfo{})
	if got[rs[0]] > 300 {
		t.Errorf("replica whose one call took MaxInt64 takes %d of 3000 picks", got[rs[0]])
	}
}

// Promise 2: weights: with one heavy replica (weight 100, a canary setup
// reversed) and three of weight 1, the three light ones are alike and
// should take alike shares of what the heavy one sheds.
func TestReviewP2CEqualWeightsEqualShare(t *testing.T) {
	b := P2C()
	rs := rvReplicas(100, 1, 1, 1)
	for _, r := range rs {
		r.State.ObserveLatency(time.Millisecond)
	}
	b.Update(rs)
	rs[0].State.InFlight.Store(8) // the heavy one is busy
	got := rvCounts(b, 60000, PickInfo{})
	lo, hi := got[rs[1]], got[rs[1]]
	for _, r := range rs[2:] {
		lo, hi = min(lo, got[r]), max(hi, got[r])
	}
	if hi > 2*lo {
		t.Errorf("weights 100,1,1,1 with the heavy one busy: light replicas took %d, %d, %d of 60000", got[rs[1]], got[rs[2]], got[rs[3]])
	}
}
