package cc

import (
	"math/rand/v2"
	"testing"
	"time"
)

// feed gives path p of c n samples of rtt, spaced by gap, from now.
func feed(c *Controller, now *int64, p, n int, rtt, gap int64) {
	for range n {
		*now += gap
		c.OnAck(*now, time.Duration(rtt), pktBytes, p, false)
	}
}

func TestPickPathPrefersFaster(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 2))
		var c Controller
		c.Init(Config{}, 2)
		now := int64(1e9)
		for i := 0; i < 400; i++ { // both 10 µs, then path 0 queued 25 µs
			rtt := 10 * us1
			if i >= 200 {
				rtt = 35 * us1
			}
			feed(&c, &now, 0, 1, rtt, 200)
			feed(&c, &now, 1, 1, 10*us1, 200)
		}
		fast := 0
		for range 1000 {
			if c.PickPath(now, rng.Uint64()) == 1 {
				fast++
			}
		}
		if fast < 900 {
			t.Fatalf("seed %d: the idle path got %d of 1000 picks", seed, fast)
		}
	}
	// Four paths, two of them queued: p2c picks a fast one unless it drew
	// both slow ones (1/6 of draws).
	var c Controller
	c.Init(Config{}, 4)
	now := int64(1e9)
	for i := 0; i < 400; i++ {
		for p := range 4 {
			rtt := 10 * us1
			if p%2 == 0 && i >= 200 {
				rtt = 40 * us1
			}
			feed(&c, &now, p, 1, rtt, 100)
		}
	}
	rng := rand.New(rand.NewPCG(9, 9))
	fast := 0
	for range 6000 {
		if c.PickPath(now, rng.Uint64())%2 == 1 {
			fast++
		}
	}
	if fast < 4800 || fast > 5200 {
		t.Errorf("4 paths, 2 fast: fast picked %d of 6000 (expected ~5000)", fast)
	}
	// With one path, always 0.
	c.Init(Config{}, 1)
	for i := range 100 {
		if p := c.PickPath(now, uint64(i)*0x9e3779b97f4a7c15); p != 0 {
			t.Fatalf("one path: picked %d", p)
		}
	}
}

// TestPickPathLearnsFromSends: a path that looks idle does not take every
// packet until its first answer (a window poured into a path known only
// from an RTT ago).
func TestPickPathLearnsFromSends(t *testing.T) {
	var c Controller
	c.Init(Config{}, 2)
	now := int64(1e9)
	for i := 0; i < 100; i++ { // path 0: 5 µs of queue, acks 1 µs apart
		feed(&c, &now, 0, 1, 15*us1, us1)
		feed(&c, &now, 1, 1, 10*us1, us1)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	onIdle := 0
	for range 40 {
		p := c.PickPath(now, rng.Uint64())
		c.OnSend(now, pktBytes, p)
		if p == 1 {
			onIdle++
		}
	}
	if onIdle < 5 || onIdle > 35 {
		t.Errorf("40 sends without answers: %d on the idle path", onIdle)
	}
}

func TestSuspectPaths(t *testing.T) {
	var c Controller
	c.Init(Config{}, 4)
	now := int64(1e9)
	for p := range 4 {
		feed(&c, &now, p, 10, 10*us1, us1)
	}
	c.OnTimeout(now, 2)
	if c.Suspect(now, 2) {
		t.Fatalf("one timeout made path 2 suspect")
	}
	c.OnTimeout(now, 2)
	if !c.Suspect(now, 2) || !c.Suspect(now+int64(10*time.Millisecond)-1, 2) || c.Suspect(now+int64(10*time.Millisecond), 2) {
		t.Fatalf("two timeouts: suspect for 10 ms expected")
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for range 2000 {
		if p := c.PickPath(now, rng.Uint64()); p == 2 {
			t.Fatalf("picked the suspect path")
		}
		if p := c.RetransmitPath(now, 1, rng.Uint64()); p == 2 || p == 1 {
			t.Fatalf("retransmission on path %d", p)
		}
	}
	c.OnTimeout(now, 2) // backoff: twice as long
	if !c.Suspect(now+int64(20*time.Millisecond)-1, 2) || c.Suspect(now+int64(20*time.Millisecond), 2) {
		t.Fatalf("third timeout: suspect for 20 ms expected")
	}
	c.OnAck(now+1, 10*time.Microsecond, pktBytes, 2, false)
	if c.Suspect(now+1, 2) {
		t.Fatalf("an acknowledgement did not clear the suspicion")
	}
	// All suspect: the one whose suspicion ends first.
	for p := range 4 {
		for range 2 + p {
			c.OnTimeout(now+2, p)
		}
	}
	for range 100 {
		if p := c.PickPath(now+3, rng.Uint64()); p != 0 {
			t.Fatalf("all suspect: picked %d, want 0 (shortest suspicion)", p)
		}
	}
}

func TestRetransmitPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, k := range []int{1, 2, 3, 8, 16, 64} {
		var c Controller
		c.Init(Config{}, k)
		now := int64(1e9)
		for p := range k {
			feed(&c, &now, p, 3, 10*us1+int64(p)*us1, us1)
		}
		seen := make([]int, k)
		for range 5000 {
			lost := rng.IntN(k)
			p := c.RetransmitPath(now, lost, rng.Uint64())
			if p < 0 || p >= k || (k > 1 && p == lost) {
				t.Fatalf("k=%d: lost on %d, retransmitted on %d", k, lost, p)
			}
			seen[p]++
		}
		if k > 1 && seen[0] == 0 {
			t.Errorf("k=%d: path 0 never used for retransmissions", k)
		}
	}
}

func TestRoundRobin(t *testing.T) {
	var c Controller
	c.Init(Config{RoundRobin: true}, 4)
	now := int64(1e9)
	for i := range 12 {
		if p := c.PickPath(now, 0); p != i%4 {
			t.Fatalf("pick %d: path %d", i, p)
		}
	}
	c.OnTimeout(now, 2)
	c.OnTimeout(now, 2)
	for i := range 12 {
		if p := c.PickPath(now, 0); p == 2 {
			t.Fatalf("pick %d: suspect path", i)
		}
	}
	for i := range 12 {
		if p := c.RetransmitPath(now, 1, 0); p == 1 || p == 2 {
			t.Fatalf("retransmission %d on path %d", i, p)
		}
	}
}

// TestMedianRule: the session's window answers the median of its paths.
// One congested path of four is left to the path chooser; three of four
// cut the window. A congested path the session stops using stops voting.
func TestMedianRule(t *testing.T) {
	run := func(congested int) (*Controller, int64) {
		var c Controller
		c.Init(Config{}, 4)
		now := int64(1e9)
		for i := 0; i < 100; i++ { // out of slow start, uncongested
			for p := range 4 {
				feed(&c, &now, p, 1, 10*us1, 250)
			}
		}
		if !c.Bypass() {
			t.Fatalf("not uncongested: %.2f", c.Window())
		}
		for i := 0; i < 2000; i++ {
			for p := range 4 {
				rtt := 10 * us1
				if p < congested {
					rtt = 50 * us1
				}
				feed(&c, &now, p, 1, rtt, 250)
			}
		}
		return &c, now
	}
	if c, _ := run(1); !c.Bypass() {
		t.Errorf("1 congested path of 4 cut the window to %.2f", c.Window())
	}
	if c, _ := run(2); !c.Bypass() {
		t.Errorf("2 congested paths of 4 cut the window to %.2f", c.Window())
	}
	c, now := run(3)
	if c.Bypass() || c.Window() > 2 {
		t.Errorf("3 congested paths of 4 left the window at %.2f", c.Window())
	}
	if c.nVote != 4 || c.nCong != 3 {
		t.Errorf("vote %d of %d", c.nCong, c.nVote)
	}
	// The session moves off paths 0-2: they go stale and stop voting.
	for i := 0; i < 4000; i++ {
		feed(c, &now, 3, 1, 10*us1, 250)
		c.PickPath(now, uint64(i)*0x9e3779b97f4a7c15)
	}
	if c.nVote != 1 || c.nCong != 0 || c.Window() <= 2 {
		t.Errorf("after moving off the congested paths: vote %d of %d, window %.2f", c.nCong, c.nVote, c.Window())
	}
}

func TestNth(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for i := 0; i < 2000; i++ {
		n := 1 + rng.IntN(64)
		xs := make([]float64, n)
		for j := range xs {
			xs[j] = float64(rng.IntN(10)) // many ties
		}
		k := rng.IntN(n)
		got := nth(append([]float64(nil), xs...), k)
		less, le := 0, 0
		for _, x := range xs {
			if x < got {
				less++
			}
			if x <= got {
				le++
			}
		}
		if less > k || le <= k {
			t.Fatalf("nth(%v, %d) = %v", xs, k, got)
		}
	}
}

// TestPickPathAfterLostProbe: a path that went quiet is tried one packet
// at a time, and counts as busy while that packet is out. When the
// packet is given up (OnTimeout) and its copy retransmitted on the other
// path, no acknowledgement will ever come back on the quiet path for it;
// the path must be tried again, not left busy for ever (on the test bed
// the fast path of 50 + 250 Mbit/s carried nothing for the rest of a
// run: the old code never picked it again).
func TestPickPathAfterLostProbe(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		var c Controller
		c.Init(Config{}, 2)
		now := int64(1e9)
		for range 200 {
			feed(&c, &now, 0, 1, 10*us1, 200)
			feed(&c, &now, 1, 1, 10*us1, 200)
		}
		// Path 1 goes quiet; the chooser probes it with one packet, which
		// is lost, while path 0 goes on being answered.
		feed(&c, &now, 0, 200, 12*us1, 1000)
		probes := 0
		for range 1000 {
			if p := c.PickPath(now, rng.Uint64()); p == 1 {
				probes++
				c.OnSend(now, pktBytes, 1)
			}
			feed(&c, &now, 0, 1, 12*us1, 1000)
		}
		if probes != 1 {
			t.Fatalf("seed %d: %d packets sent on the quiet path while its probe was out, want 1", seed, probes)
		}
		c.OnTimeout(now, 1) // the probe is given up (its copy goes on path 0)
		again := 0
		for range 1000 {
			if c.PickPath(now, rng.Uint64()) == 1 {
				again++
			}
			feed(&c, &now, 0, 1, 12*us1, 1000)
		}
		if again == 0 {
			t.Errorf("seed %d: the quiet path was never tried again after its probe was given up", seed)
		}
	}
}

// TestPickPathAfterSilentProbe: as TestPickPathAfterLostProbe, but the
// probe's record goes without a timeout (another copy of its data was
// answered, and the engine drops the record with no sample): after
// probeWait the quiet path is tried again.
func TestPickPathAfterSilentProbe(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 4))
		var c Controller
		c.Init(Config{}, 2)
		now := int64(1e9)
		for range 200 {
			feed(&c, &now, 0, 1, 10*us1, 200)
			feed(&c, &now, 1, 1, 10*us1, 200)
		}
		feed(&c, &now, 0, 200, 12*us1, 1000)
		probes := 0
		start := now
		for now-start < 10*probeWait {
			if p := c.PickPath(now, rng.Uint64()); p == 1 {
				probes++
				c.OnSend(now, pktBytes, 1)
			}
			feed(&c, &now, 0, 1, 12*us1, 1000)
		}
		// One probe per probeWait (the path's 8 RTTs are shorter here).
		if probes < 5 || probes > 11 {
			t.Errorf("seed %d: %d probes of the quiet path in %d probe waits", seed, probes, 10)
		}
	}
}
