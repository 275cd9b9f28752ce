package balancer

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func owners(b Balancer, keys []string) []*Replica {
	out := make([]*Replica, len(keys))
	for i, k := range keys {
		out[i] = b.Pick(PickInfo{Key: k, HasKey: true})
	}
	return out
}

func randomKeys(seed uint64, n int) []string {
	rnd := rand.New(rand.NewPCG(seed, 2))
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", rnd.Uint64())
	}
	return keys
}

// TestHashRemoveMovesOnlyItsKeys: removing one of N replicas moves
// exactly the keys it held (about 1/N), and no other key.
func TestHashRemoveMovesOnlyItsKeys(t *testing.T) {
	var worst float64
	for seed := range uint64(10) {
		const n = 8
		rs := newReplicas(n)
		for i, r := range rs {
			r.Addr = fmt.Sprintf("10.%d.%d.%d:7000", seed, i, i*7)
		}
		keys := randomKeys(seed, 20000)
		b := Hash()
		b.Update(rs)
		before := owners(b, keys)
		gone := rs[int(seed)%n]
		rest := make([]*Replica, 0, n-1)
		for _, r := range rs {
			if r != gone {
				rest = append(rest, r)
			}
		}
		b.Update(rest)
		after := owners(b, keys)
		moved := 0
		for i := range keys {
			if before[i] != after[i] {
				moved++
				if before[i] != gone {
					t.Fatalf("seed %d: key %s moved from %s, which stayed", seed, keys[i], before[i].Addr)
				}
			} else if after[i] == gone {
				t.Fatalf("seed %d: key %s still on the removed replica", seed, keys[i])
			}
		}
		frac := float64(moved) / float64(len(keys))
		worst = max(worst, frac)
		if frac > 1.0/n*1.35 {
			t.Fatalf("seed %d: removing 1 of %d moved %.3f of keys", seed, n, frac)
		}
	}
	t.Logf("removing 1 of 8 replicas moved at most %.3f of keys (1/N = %.3f)", worst, 1.0/8)
}

// TestHashAddMovesOnlyToNew: adding an (N+1)th replica moves about
// 1/(N+1) of the keys, all of them to the new replica.
func TestHashAddMovesOnlyToNew(t *testing.T) {
	var lo, hi float64 = 1, 0
	for seed := range uint64(10) {
		const n = 8
		rs := newReplicas(n + 1)
		for i, r := range rs {
			r.Addr = fmt.Sprintf("10.%d.%d.%d:7000", seed, i, i*3)
		}
		keys := randomKeys(seed, 20000)
		b := Hash()
		b.Update(rs[:n])
		before := owners(b, keys)
		b.Update(rs)
		after := owners(b, keys)
		moved := 0
		for i := range keys {
			if before[i] != after[i] {
				moved++
				if after[i] != rs[n] {
					t.Fatalf("seed %d: key moved to %s, not the new replica", seed, after[i].Addr)
				}
			}
		}
		frac := float64(moved) / float64(len(keys))
		lo, hi = min(lo, frac), max(hi, frac)
		if want := 1.0 / (n + 1); frac < want*0.65 || frac > want*1.35 {
			t.Fatalf("seed %d: adding a 9th moved %.3f of keys, want about %.3f", seed, frac, want)
		}
	}
	t.Logf("adding a 9th replica moved %.3f..%.3f of keys (1/(N+1) = %.3f)", lo, hi, 1.0/9)
}

// TestHashSpreadAndWeights: keys spread near evenly, a weight-2 replica
// takes about twice the keys, keyless calls spread the same way, and the
// ring does not depend on the order Update got the replicas in.
func TestHashSpreadAndWeights(t *testing.T) {
	rs := newReplicas(5, 1, 1, 1, 1, 2)
	b := Hash()
	b.Update(rs)
	keys := randomKeys(7, 60000)
	byKey := map[*Replica]int{}
	for _, r := range owners(b, keys) {
		byKey[r]++
	}
	keyless := pickCounts(b, 60000)
	for _, r := range rs {
		due := float64(r.Weight) / 6
		for what, got := range map[string]int{"keyed": byKey[r], "keyless": keyless[r]} {
			if s := float64(got) / 60000; s < due*0.75 || s > due*1.25 {
				t.Errorf("%s weight %d: %s share %.3f, due %.3f", r.Addr, r.Weight, what, s, due)
			}
		}
	}
	reversed := []*Replica{rs[4], rs[3], rs[2], rs[1], rs[0]}
	b2 := Hash()
	b2.Update(reversed)
	a, c := owners(b, keys), owners(b2, keys)
	for i := range keys {
		if a[i] != c[i] {
			t.Fatalf("key %s: %s or %s depending on Update's order", keys[i], a[i].Addr, c[i].Addr)
		}
	}
}

func TestHashEmpty(t *testing.T) {
	b := Hash()
	if b.Pick(PickInfo{Key: "k", HasKey: true}) != nil {
		t.Fatal("pick before Update")
	}
	b.Update(nil)
	if b.Pick(PickInfo{}) != nil {
		t.Fatal("pick from no replicas")
	}
}
