package cc

import (
	"testing"
	"time"
)

// Acknowledgements that must not cut the window: those marked under their
// share (Controller.exempt) and those a stall of this host inflated
// (Controller.stalled).

// TestUnderShareGrowsBelowOnePacket: a congested acknowledgement marked
// under its share by the server grows a window below one packet, where
// unmarked it would cut; at a window of a packet or more the mark changes
// nothing and the session cuts as before.
func TestUnderShareGrowsBelowOnePacket(t *testing.T) {
	var marked, unmarked Controller
	for _, x := range []struct {
		c     *Controller
		under bool
	}{{&marked, true}, {&unmarked, false}} {
		x.c.Init(Config{}, 1)
		f := warm(t, x.c)
		f.under = x.under
		f.run(200*us1, 60*us1) // a queue: cuts from the full window
	}
	if w := marked.Window(); w >= 32 || w < 1 || w != unmarked.Window() {
		t.Fatalf("above one packet: marked %.2f, unmarked %.2f; want the same cuts", w, unmarked.Window())
	}
	// A standing queue brings the window below one packet.
	var c Controller
	c.Init(Config{}, 1)
	f := warm(t, &c)
	for end := f.now + 20*time.Millisecond.Nanoseconds(); c.Window() >= 1 && f.now < end; {
		f.step(400*us1, 0)
	}
	w := c.Window()
	if w >= 1 || w <= c.cfg.MinWindow {
		t.Fatalf("a 400 µs RTT on a 10 µs path left the window at %.2f, want between the floor and 1", w)
	}
	marked, unmarked = c, c
	now := f.now + 500*us1 // an RTT on: a cut is allowed again, and it is no stall
	marked.OnAck(now, 400*time.Microsecond, pktBytes, 0, true)
	unmarked.OnAck(now, 400*time.Microsecond, pktBytes, 0, false)
	if marked.Window() <= w {
		t.Errorf("below one packet, a marked congested ack left the window at %.3f (was %.3f)", marked.Window(), w)
	}
	if unmarked.Window() >= w {
		t.Errorf("below one packet, an unmarked congested ack did not cut: %.3f (was %.3f)", unmarked.Window(), w)
	}
}

// TestNoStallTrap: the pacer spaces a session's packets by its smoothed
// RTT over the window, so the stall check must not take acknowledgements
// that come at that spacing for the end of a host stall. erpc-bench's
// incast caught a session in this state (a stall at its start had left
// its smoothed RTT at 1.07 ms on a 25 us path): its raw RTT, which every
// sample moves, had come down to 60 us, so every acknowledgement, paced
// 1.2 ms after the last, looked like a silence of twenty raw RTTs; no
// sample counted, the smoothed RTT and the window (0.906) never moved,
// and the session sent a packet per 1.2 ms for a quarter of a second
// after the others had finished.
func TestNoStallTrap(t *testing.T) {
	var c Controller
	c.Init(Config{}, 1)
	now := int64(1e9)
	c.ObserveBase(now, 25*time.Microsecond, 0)
	c.slowStart = false
	c.setWindow(0.906)
	c.srtt, c.rawRTT, c.lastAck = 1073*us1, 60*us1, now
	p := c.path(0)
	p.srtt, p.sampled, p.lastSample = 1073*us1, true, now
	const rtt = 40 * us1
	start := now
	for range 200 {
		now = max(now, c.NextSend(now))
		c.OnSend(now, pktBytes, 0)
		now += rtt
		c.OnAck(now, time.Duration(rtt), pktBytes, 0, false)
		if c.SRTT() < 200*time.Microsecond && c.Window() >= 1 {
			return
		}
	}
	t.Fatalf("%v of paced 40 us round trips: smoothed RTT still %v, window %.3f",
		time.Duration(now-start), c.SRTT(), c.Window())
}
