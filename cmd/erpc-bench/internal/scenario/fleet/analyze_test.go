//go:build linux

package fleet

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/testbed"
)

// synthetic is a run's calls: n calls at uniform random times over
// [0, dur) spread over 4 replicas with latencies of 100-200 µs; from t0
// to t0+bad, the calls to replica 0 fail and the others take five times
// as long.
func synthetic(rng *rand.Rand, base time.Time, n int, dur, t0, bad time.Duration) []call {
	calls := make([]call, n)
	for i := range calls {
		at := time.Duration(rng.Int64N(int64(dur)))
		c := call{at: base.Add(at), srv: rng.IntN(4), client: rng.IntN(3),
			lat: 100*time.Microsecond + time.Duration(rng.Int64N(int64(100*time.Microsecond)))}
		if at >= t0 && at < t0+bad {
			if c.srv == 0 {
				c.lat, c.srv = -1, -1
			} else {
				c.lat *= 5
			}
		}
		calls[i] = c
	}
	return calls
}

// TestRecoveryFindsTheBadSpell: over many seeded runs whose p99 is bad
// (failures, slow calls) for a random spell after t0, recovery ends no
// later than the spell's end (to the step) and not more than the part of it too short to move
// a p99 (1 % of the window) plus a step earlier; with the spell lasting to
// the end there is no recovery.
func TestRecoveryFindsTheBadSpell(t *testing.T) {
	base := time.Unix(1000, 0)
	for seed := range uint64(16) {
		rng := rand.New(rand.NewPCG(seed, 1))
		dur, t0 := 8*time.Second, 3*time.Second
		bad := time.Duration(100+rng.IntN(2400)) * time.Millisecond
		calls := synthetic(rng, base, 20000, dur, t0, bad)
		before := summarize(window(calls, base, base.Add(t0)))
		if before.failed != 0 {
			t.Fatalf("seed %d: %d failed before the spell", seed, before.failed)
		}
		limit := recoveryLimit * before.quantile(0.99)
		r := recovery(calls, base.Add(t0), base.Add(dur), limit)
		if r > bad.Truncate(recoveryStep)+recoveryStep || r < bad-100*time.Millisecond-recoveryStep {
			t.Errorf("seed %d: spell %v, recovery %v", seed, bad, r)
		}
		if got := recovery(calls, base.Add(t0), base.Add(t0+bad), limit); got != -1 {
			t.Errorf("seed %d: bad to the end, recovery %v", seed, got)
		}
		failed := summarize(window(calls, base.Add(t0), base.Add(t0+bad))).failed
		if failed == 0 {
			t.Fatalf("seed %d: the spell failed no call", seed)
		}
		sh := shares(calls, 4)
		sum := 0.0
		for _, v := range sh {
			sum += v
		}
		if math.Abs(sum-1) > 0.005 {
			t.Errorf("seed %d: shares %v", seed, sh)
		}
	}
}

// TestMaxPerSecond: the most connects in any second across replicas
// whose bins start at different times equals a brute-force count over the
// connects' times.
func TestMaxPerSecond(t *testing.T) {
	w := int64(testbed.FleetBinWidth)
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 2))
		var bins []testbed.ConnectBins
		var times []int64 // bin starts, one per connect
		for range 1 + rng.IntN(5) {
			b := testbed.ConnectBins{EpochNS: int64(rng.IntN(20)) * w}
			for i := range rng.IntN(40) {
				n := int64(rng.IntN(30))
				b.N = append(b.N, n)
				for range n {
					times = append(times, b.EpochNS+int64(i)*w)
				}
			}
			bins = append(bins, b)
		}
		var want int64
		for _, s := range times {
			var c int64
			for _, u := range times {
				if u >= s && u < s+int64(time.Second) {
					c++
				}
			}
			want = max(want, c)
		}
		if got := maxPerSecond(bins); got != want {
			t.Errorf("seed %d: %d, want %d", seed, got, want)
		}
	}
}
