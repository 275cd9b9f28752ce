package cc

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestSlowStart(t *testing.T) {
	var c Controller
	c.Init(Config{}, 1)
	if c.Window() != 2 || c.Bypass() || !c.slowStart {
		t.Fatalf("fresh controller: window %.2f bypass %v slow start %v", c.Window(), c.Bypass(), c.slowStart)
	}
	now := int64(1e9)
	for i := 0; i < 30; i++ {
		w := c.Window()
		now += us1
		c.OnAck(now, 10*time.Microsecond, pktBytes, 0, false)
		if c.Window() != w+1 {
			t.Fatalf("ack %d: slow start went %.2f -> %.2f", i, w, c.Window())
		}
	}
	if c.Window() != 32 || !c.Bypass() || c.slowStart {
		t.Fatalf("after 30 acks: window %.2f bypass %v slow start %v", c.Window(), c.Bypass(), c.slowStart)
	}

	// The first congestion signal ends slow start with a cut.
	c.Init(Config{}, 1)
	f := newFlow(&c, 1e9)
	f.run(20*us1, 10*us1)
	f.run(500*us1, 60*us1)
	if c.slowStart || c.Window() >= 32 {
		t.Fatalf("slow start survived a queue: window %.2f", c.Window())
	}
}

func TestAdditiveIncrease(t *testing.T) {
	var c Controller
	c.Init(Config{}, 1)
	f := warm(t, &c)
	f.run(500*us1, 60*us1) // a queue: the window comes down
	if c.Window() >= 32 || c.slowStart {
		t.Fatalf("no cut under a queue: window %.2f", c.Window())
	}
	// Below target each acknowledgement adds AI/cwnd: one packet per RTT.
	f.run(200*us1, 10*us1)
	for i := 0; i < 50; i++ {
		w := c.Window()
		f.step(10*us1, 0)
		if want := min(w+1/w, 32); math.Abs(c.Window()-want) > 1e-9 {
			t.Fatalf("ack %d: %.4f -> %.4f, want %.4f", i, w, c.Window(), want)
		}
	}
	// Below one packet (Swift): AI per acknowledgement.
	c.setWindow(0.25)
	f.step(10*us1, 0)
	if math.Abs(c.Window()-1.25) > 1e-9 {
		t.Fatalf("below one packet: 0.25 -> %.4f, want 1.25", c.Window())
	}
}

func TestMultiplicativeDecrease(t *testing.T) {
	for _, tc := range []struct {
		rtt  int64
		want float64 // window after the first cut
	}{
		// Target: 10 µs base + 10 µs tolerated. The cut takes Beta of the
		// queued share: 1 - 0.8*(22-10)/22.
		{22 * us1, 32 * (1 - 0.8*12/22.0)},
		// A deep queue is cut by MaxMDF at most.
		{200 * us1, 16},
	} {
		var c Controller
		c.Init(Config{}, 1)
		f := warm(t, &c)
		var cuts []int64
		w := c.Window()
		for end := f.now + 2000*us1; f.now < end; {
			f.step(tc.rtt, 0)
			if c.Window() < w {
				cuts = append(cuts, f.now)
			}
			w = c.Window()
		}
		if len(cuts) == 0 {
			t.Fatalf("rtt %d: no cut", tc.rtt)
		}
		// Replay to read the window right after the first cut.
		c.Init(Config{}, 1)
		f = warm(t, &c)
		for c.Window() == 32 {
			f.step(tc.rtt, 0)
		}
		if math.Abs(c.Window()-tc.want) > 1e-9 {
			t.Errorf("rtt %d: first cut to %.4f, want %.4f", tc.rtt, c.Window(), tc.want)
		}
		// At most once per (smoothed, filtered) RTT.
		for i := 1; i < len(cuts); i++ {
			if gap := cuts[i] - cuts[i-1]; gap < int64(c.SRTT())*9/10 {
				t.Errorf("rtt %d: cuts %d ns apart, srtt %v", tc.rtt, gap, c.SRTT())
			}
		}
		t.Logf("rtt %v: %d cuts in 2 ms, first to %.2f, window now %.2f", time.Duration(tc.rtt), len(cuts), tc.want, c.Window())
	}
}

func TestPacing(t *testing.T) {
	var c Controller
	c.Init(Config{}, 1)
	f := warm(t, &c)
	// Uncongested: nothing paced.
	c.OnSend(f.now, pktBytes, 0)
	if c.NextSend(f.now) != f.now || c.Allowed() != 32 {
		t.Fatalf("uncongested: next %d (now %d), allowed %d", c.NextSend(f.now), f.now, c.Allowed())
	}
	// Bring the window below one packet with a long deep queue.
	f.run(20000*us1, 400*us1)
	w, srtt := c.Window(), int64(c.SRTT())
	if w >= 1 || c.Allowed() != 1 {
		t.Fatalf("window %.3f allowed %d after a long deep queue", w, c.Allowed())
	}
	now := f.now + 1e6
	c.OnSend(now, pktBytes, 0)
	if got, want := c.NextSend(now), now+int64(float64(srtt)/w); got != want || c.NextSend(now+1) != want {
		t.Errorf("window %.3f srtt %d: next send %d after the send, want %d (one packet per RTT/window)", w, srtt, got-now, want-now)
	}
	if got := c.NextSend(now + int64(float64(srtt)/w) + 5); got != now+int64(float64(srtt)/w)+5 {
		t.Errorf("due time passed: NextSend %d", got)
	}
	// Half a packet, half the gap.
	c.OnSend(now, pktBytes/2, 0)
	if got, want := c.NextSend(now), now+int64(float64(srtt)*float64(pktBytes/2)/pktBytes/w); got != want {
		t.Errorf("half packet: gap %d, want %d", got-now, want-now)
	}
	// Above one packet, paced at window/srtt while congested.
	c.setWindow(4)
	c.OnSend(now, pktBytes, 0)
	if got, want := c.NextSend(now), now+srtt/4; got != want || c.Allowed() != 4 {
		t.Errorf("window 4: gap %d want %d, allowed %d", got-now, want-now, c.Allowed())
	}
	c.setWindow(4.2)
	if c.Allowed() != 5 {
		t.Errorf("window 4.2 allows %d", c.Allowed())
	}
}

func TestBaseRTT(t *testing.T) {
	var c Controller
	c.Init(Config{}, 1)
	now := int64(5e9)
	c.OnAck(now, 12*time.Microsecond, pktBytes, 0, false)
	if c.BaseRTT(0) != 12*time.Microsecond {
		t.Fatalf("base %v", c.BaseRTT(0))
	}
	c.OnAck(now+1, 9*time.Microsecond, pktBytes, 0, false)
	if c.BaseRTT(0) != 9*time.Microsecond {
		t.Fatalf("a lower sample did not lower the base: %v", c.BaseRTT(0))
	}
	c.OnAck(now+2, 100*time.Nanosecond, pktBytes, 0, false) // an artifact, below MinRTT
	if c.BaseRTT(0) != 9*time.Microsecond {
		t.Fatalf("an artifact set the base: %v", c.BaseRTT(0))
	}
	// Only 11 µs samples from now on: the 9 µs base holds for at least 3/4
	// of BaseWindow (10 s) and expires by the end of it.
	var kept, gone int64
	for tt := now + 1e6; tt < now+12e9; tt += 1e6 {
		c.OnAck(tt, 11*time.Microsecond, pktBytes, 0, false)
		if c.BaseRTT(0) == 9*time.Microsecond {
			kept = tt - now
		} else if gone == 0 {
			gone = tt - now
		}
	}
	if kept < 7500e6 || gone == 0 || gone > 10e9+1e6 || c.BaseRTT(0) != 11*time.Microsecond {
		t.Errorf("base of 9 µs kept for %v, gone after %v; base now %v", time.Duration(kept), time.Duration(gone), c.BaseRTT(0))
	}
	// An idle session forgets everything after BaseWindow.
	c.OnAck(now+40e9, 20*time.Microsecond, pktBytes, 0, false)
	if c.BaseRTT(0) != 20*time.Microsecond {
		t.Errorf("base after 28 s idle: %v", c.BaseRTT(0))
	}
}

// TestBypassExact: over random sequences of every input, Bypass is true
// exactly when the window is at its maximum, and then Allowed is the
// maximum and nothing is paced.
func TestBypassExact(t *testing.T) {
	both := 0
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		var c Controller
		k := 1 + rng.IntN(4)
		c.Init(Config{}, k)
		now := int64(rng.Uint64() >> 2)
		sawBypass, sawCongested := false, false
		for i := 0; i < 3000; i++ {
			now += rng.Int64N(20 * us1)
			p := rng.IntN(k)
			switch rng.IntN(10) {
			case 0:
				c.OnTimeout(now, p)
			case 1, 2, 3:
				c.OnSend(now, 1+rng.IntN(pktBytes), p)
			default:
				rtt := 10*us1 + rng.Int64N(5*us1)
				if rng.IntN(8) == 0 {
					rtt += rng.Int64N(300 * us1)
				}
				c.OnAck(now, time.Duration(rtt), pktBytes, p, false)
			}
			b := c.Bypass()
			if b != (c.Window() == c.cfg.MaxWindow) {
				t.Fatalf("seed %d op %d: bypass %v with window %.3f", seed, i, b, c.Window())
			}
			if b && (c.Allowed() != 32 || c.NextSend(now) != now || c.NextSend(now-1) != now-1) {
				t.Fatalf("seed %d op %d: bypass but allowed %d, next send %d (now %d)", seed, i, c.Allowed(), c.NextSend(now), now)
			}
			if !b && (c.Window() >= 32 || c.Allowed() < 1) {
				t.Fatalf("seed %d op %d: window %.3f allowed %d", seed, i, c.Window(), c.Allowed())
			}
			sawBypass = sawBypass || b
			sawCongested = sawCongested || (!b && !c.slowStart)
		}
		if sawBypass && sawCongested {
			both++
		}
	}
	if both < 150 {
		t.Fatalf("only %d of 200 sequences went both through bypass and congestion", both)
	}
}

// TestFilter: isolated spikes and a stall of the client do not cut the
// window; a queue that holds every sample high for an RTT does.
func TestFilter(t *testing.T) {
	var c Controller
	c.Init(Config{}, 1)
	f := warm(t, &c)
	target := int64(c.Target(0))

	// One sample in 20 is 1 ms late.
	for i := 0; i < 4000; i++ {
		noise := int64(0)
		if i%20 == 7 {
			noise = 1e6
		}
		f.step(10*us1, noise)
	}
	if !c.Bypass() {
		t.Fatalf("spikes cut the window to %.2f", c.Window())
	}

	// A 2 ms stall: every acknowledgement of the window is processed at its
	// end, all 2 ms late, and the next packets leave then.
	stallEnd := f.now + 2e6
	f.now = stallEnd
	for range len(f.sent) {
		f.step(0, 0)
	}
	if f.now != stallEnd || !c.Bypass() {
		t.Fatalf("a stall cut the window to %.2f", c.Window())
	}
	f.run(1000*us1, 10*us1)

	// A queue: every sample 30 µs (target %d) for an RTT or two.
	if 30*us1 <= target {
		t.Fatalf("target %d", target)
	}
	first, start := int64(0), f.now
	for end := f.now + 200*us1; f.now < end && first == 0; {
		f.step(30*us1, 0)
		if !c.Bypass() {
			first = f.now
		}
	}
	if first == 0 {
		t.Fatalf("a standing queue did not cut the window")
	}
	t.Logf("target %v; a queue of 20 µs cut the window after %v, to %.2f", time.Duration(target), time.Duration(first-start), c.Window())
}

func TestTimeouts(t *testing.T) {
	// Random loss: timeouts among acknowledgements below target.
	var c Controller
	c.Init(Config{}, 1)
	f := warm(t, &c)
	for i := 0; i < 5000; i++ {
		f.step(10*us1, 0)
		if i%50 == 0 {
			c.OnTimeout(f.now, 0)
		}
	}
	if !c.Bypass() {
		t.Fatalf("random timeouts cut the window to %.2f", c.Window())
	}

	// A timeout while the delay says congestion: a cut of MaxMDF, once
	// per RTT.
	for c.Window() == 32 {
		f.step(40*us1, 0)
	}
	f.now += int64(c.SRTT())
	w := c.Window()
	c.OnTimeout(f.now, 0)
	c.OnTimeout(f.now+1, 0)
	if c.Window() != w/2 {
		t.Fatalf("timeouts under congestion: %.2f -> %.2f, want %.2f", w, c.Window(), w/2)
	}

	// Silence: timeouts with no acknowledgement at all.
	c.Init(Config{}, 1)
	f = warm(t, &c)
	for i := 0; i < silentTimeouts; i++ {
		c.OnTimeout(f.now+int64(i)*1e6, 0)
	}
	if c.Window() != 16 {
		t.Fatalf("%d silent timeouts left the window at %.2f", silentTimeouts, c.Window())
	}
}

func TestInit(t *testing.T) {
	var c Controller
	if n := testing.AllocsPerRun(100, func() { c.Init(Config{}, inlinePaths) }); n != 0 {
		t.Errorf("Init with %d paths: %v allocations", inlinePaths, n)
	}
	c.Init(Config{}, 64)
	if n := testing.AllocsPerRun(100, func() { c.Init(Config{}, 64) }); n != 0 {
		t.Errorf("re-Init with 64 paths: %v allocations", n)
	}
	for _, k := range []int{-1, 0, 1, 200} {
		c.Init(Config{}, k)
		if c.Paths() != min(max(k, 1), MaxPaths) {
			t.Errorf("Init(%d): %d paths", k, c.Paths())
		}
	}
	c.Init(Config{MaxWindow: 8, InitialWindow: 100}, 1)
	if c.Window() != 8 || !c.Bypass() || c.Allowed() != 8 {
		t.Errorf("initial window above the maximum: %.2f, allowed %d", c.Window(), c.Allowed())
	}
}
