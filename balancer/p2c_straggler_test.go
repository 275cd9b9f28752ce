package balancer

import (
	"errors"
	"testing"
	"time"
)

// TestP2CStragglerRestart: a replica back from a slow spell still has
// one call of the spell in flight (a straggler). P2C retries it; the
// straggler ends first, then the retry's own call (fast). Only the
// retry's sample restarts the average, whatever the straggler's was:
// slow, faster than the average, or a failure (the review found each of
// them taking the restart of rules that looked at the sample alone).
// Then the replica, as fast as its partner, is picked again within the
// retry bound.
func TestP2CStragglerRestart(t *testing.T) {
	t0 := time.Unix(1000, 0) // the straggler began in the spell
	for _, straggler := range []DoneInfo{
		{Latency: 5 * time.Millisecond, Start: t0},
		{Latency: 700 * time.Microsecond, Start: t0},
		{Latency: 100 * time.Microsecond, Start: t0, Err: errors.New("deadline")},
	} {
		rs := newReplicas(2)
		slowSpell(rs)               // rs[0]: 1 ms average, rs[1]: 100 µs
		rs[0].State.InFlight.Add(1) // the straggler
		b := P2C()
		b.Update(rs)
		now := t0.Add(time.Second)
		pick := func() *Replica {
			now = now.Add(100 * time.Microsecond)
			return b.Pick(PickInfo{Start: now})
		}
		picks := 0
		for ; picks < 20000; picks++ {
			r := pick()
			if r == rs[0] {
				break
			}
			b.Done(r, DoneInfo{Latency: 100 * time.Microsecond, Start: now})
		}
		if picks == 20000 {
			t.Fatalf("the replica was not retried within %d picks", picks)
		}
		retry := now
		rs[0].State.InFlight.Add(-1)
		b.Done(rs[0], straggler) // the straggler ends first
		b.Done(rs[0], DoneInfo{Latency: 100 * time.Microsecond, Start: retry})
		if avg := rs[0].State.Latency(); avg > 125*time.Microsecond {
			t.Errorf("straggler %v: after its retry answered in 100 µs the replica's average is %v, not restarted by the retry", straggler, avg)
		}
		out := 0
		for ; out < 20000; out++ {
			r := pick()
			if r == rs[0] {
				break
			}
			b.Done(r, DoneInfo{Latency: 100 * time.Microsecond, Start: now})
		}
		if out > retryBound(2) {
			t.Errorf("straggler %v: a replica as fast as its partner, whose retry answered at that speed, then sat out %d picks (bound %d)", straggler, out, retryBound(2))
		}
	}
}
