package balancer

import (
	"strings"
	"testing"
)

func names(rs []*Replica, picks []*Replica) string {
	idx := map[*Replica]byte{}
	for i, r := range rs {
		idx[r] = 'a' + byte(i)
	}
	var b strings.Builder
	for _, p := range picks {
		b.WriteByte(idx[p])
	}
	return b.String()
}

// TestRoundRobinOrder: the exact smooth order for a few weightings,
// repeated cycle after cycle.
func TestRoundRobinOrder(t *testing.T) {
	for _, tc := range []struct {
		weights []uint32
		want    string
	}{
		{[]uint32{1, 1, 1}, "abc"},
		{[]uint32{0, 0}, "ab"}, // weight 0 counts as 1
		{[]uint32{5, 1, 1}, "aabacaa"},
		{[]uint32{10, 2, 2}, "aabacaa"}, // divided by the gcd
		{[]uint32{4, 3, 2}, "abcabacba"},
	} {
		rs := newReplicas(len(tc.weights), tc.weights...)
		b := RoundRobin()
		b.Update(rs)
		picks := make([]*Replica, 3*len(tc.want))
		for i := range picks {
			picks[i] = b.Pick(PickInfo{})
		}
		if got := names(rs, picks); got != strings.Repeat(tc.want, 3) {
			t.Errorf("weights %v: order %s, want %s ×3", tc.weights, got, tc.want)
		}
	}
}

// TestRoundRobinLargeWeights: weights summing past the schedule bound keep
// their proportions roughly and every replica keeps a slot.
func TestRoundRobinLargeWeights(t *testing.T) {
	rs := newReplicas(3, 1_000_000, 3_000_001, 1)
	b := RoundRobin()
	b.Update(rs)
	got := pickCounts(b, 4*maxSchedule)
	if got[rs[2]] == 0 {
		t.Fatal("the light replica lost its slot")
	}
	if ratio := float64(got[rs[1]]) / float64(got[rs[0]]); ratio < 2.9 || ratio > 3.1 {
		t.Fatalf("3:1 weights gave a ratio of %.2f", ratio)
	}
}

func TestRoundRobinEmpty(t *testing.T) {
	b := RoundRobin()
	if b.Pick(PickInfo{}) != nil {
		t.Fatal("pick before Update")
	}
	b.Update(nil)
	if b.Pick(PickInfo{}) != nil {
		t.Fatal("pick from no replicas")
	}
}
