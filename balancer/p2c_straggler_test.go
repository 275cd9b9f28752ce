package balancer

import (
	"testing"
	"time"
)

// TestP2CStragglerRestart: a replica back from a slow spell still
// has one call of the spell in flight (a straggler). P2C retries it;
// the straggler ends first, then the retry's own call (fast). The doc
// promises "that call restarts its average": one call shows that it
// recovered. Here the straggler's sample takes the restart, and the
// retry's fast sample is only blended in.
func TestP2CStragglerRestart(t *testing.T) {
	rs := newReplicas(2)
	slowSpell(rs)               // rs[0]: 1 ms average, rs[1]: 100 µs
	rs[0].State.InFlight.Add(1) // the straggler, started in the spell
	b := P2C()
	b.Update(rs)
	picks := 0
	for ; picks < 20000; picks++ {
		r := b.Pick(PickInfo{})
		if r == rs[0] {
			break
		}
		r.State.InFlight.Add(1)
		r.State.InFlight.Add(-1)
		b.Done(r, DoneInfo{Latency: 100 * time.Microsecond})
	}
	if picks == 20000 {
		t.Fatalf("the replica was not retried within %d picks", picks)
	}
	rs[0].State.InFlight.Add(1) // the retry
	// the straggler ends first
	rs[0].State.InFlight.Add(-1)
	b.Done(rs[0], DoneInfo{Latency: 5 * time.Millisecond})
	// then the retry, fast
	rs[0].State.InFlight.Add(-1)
	b.Done(rs[0], DoneInfo{Latency: 100 * time.Microsecond})
	avg := rs[0].State.Latency()
	t.Logf("retried after %d picks; average after the retry's fast call: %v", picks, avg)
	if avg > 125*time.Microsecond {
		t.Errorf("after its retry answered in 100 µs the replica's average is %v (the straggler's 5 ms took the restart): it looks %.0f× dearer than its partner, not recovered", avg, float64(avg)/float64(100*time.Microsecond))
	}
	// and how long it now sits out
	out := 0
	for ; out < 20000; out++ {
		r := b.Pick(PickInfo{})
		if r == rs[0] {
			break
		}
		b.Done(r, DoneInfo{Latency: 100 * time.Microsecond})
	}
	t.Logf("then sat out %d picks (the promise's bound for a 10× spell: about %d)", out, retryBound(2))
	if out > retryBound(2) {
		t.Errorf("a replica as fast as its partner, whose retry answered at that speed, then sat out %d picks", out)
	}
}
