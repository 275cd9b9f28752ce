package proto

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestFloodAmplification measures what a flood of forged connects gets
// back, in bytes, at random rates below and above the half-open bound's
// rate (MaxHalfOpen per HalfOpenTimeout), with every session the flood
// makes run to its reaping: at most 13/8 of what it sends (a 64-byte ack
// and a 40-byte closing reset per 64-byte connect below the bound, a
// 72-byte retry above it), as the package doc says.
func TestFloodAmplification(t *testing.T) {
	const maxHalf = 64
	worst, retried := 0.0, 0
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 13))
		e := New(Config{Random: seedRandom(seed), CookieSeed: [32]byte{byte(seed), 2}, MaxHalfOpen: maxHalf})
		rate := 10 + rng.IntN(200) // connects per second: the bound's rate is 64/s
		now := Time(time.Second)
		in, out := 0, 0
		var buf []byte
		drain := func() {
			drainEvents(e)
			for _, p := range e.Outgoing(now) {
				out += p.Len()
			}
		}
		for range 3000 { // 3 s of flood
			if rng.IntN(1000) < rate {
				from, p := floodConnect(rng, buf)
				buf = p
				in += len(p)
				e.Receive(now, from, p)
			}
			now += Time(time.Millisecond)
			e.Tick(now)
			drain()
		}
		now += 2 * Time(e.cfg.HalfOpenTimeout) // every session the flood made is reaped
		e.Tick(now)
		drain()
		st := e.Stats()
		if st.ServerSessions != 0 || st.HalfOpenReaped == 0 || (rate > 2*maxHalf && st.RetriesSent == 0) {
			t.Fatalf("seed %d: the flood did not run its course: %+v", seed, st)
		}
		if st.RetriesSent > 0 {
			retried++
		}
		ratio := float64(out) / float64(in)
		worst = max(worst, ratio)
		if 8*out > 13*in {
			t.Fatalf("seed %d: %d B sent for %d B of forged connects: %.3f, over 13/8", seed, out, in, ratio)
		}
	}
	t.Logf("worst amplification %.3f (bound 13/8 = 1.625); %d of 20 floods pressed past the bound", worst, retried)
	if retried == 0 || retried == 20 {
		t.Fatalf("%d of 20 floods pressed past the bound: both regimes must be tried", retried)
	}
}
