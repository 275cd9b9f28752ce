package cc

import (
	"testing"
	"time"
)

const us1 = int64(time.Microsecond)

// flow drives one controller as a window-limited session over one path
// whose RTT is given by a function of time: every acknowledgement returns a
// credit, which is spent at once on the next packet (an ack clock). It has
// no queue of its own; the tests decide what the RTT is.
type flow struct {
	c     *Controller
	now   int64
	sent  []int64 // send times of the packets in flight, oldest first
	path  int
	under bool // the server's share mark on every acknowledgement
}

func newFlow(c *Controller, now int64) *flow {
	f := &flow{c: c, now: now}
	f.fill()
	return f
}

// fill sends while the window allows.
func (f *flow) fill() {
	for len(f.sent) < f.c.Allowed() && f.c.NextSend(f.now) <= f.now {
		f.c.OnSend(f.now, pktBytes, f.path)
		f.sent = append(f.sent, f.now)
	}
}

// step acknowledges the oldest packet after rtt (if it was sent early
// enough, else at the earliest time that makes it rtt), plus noise on the
// sample alone, and refills the window.
func (f *flow) step(rtt, noise int64) {
	if len(f.sent) == 0 {
		f.now = max(f.now, f.c.NextSend(f.now))
		f.fill()
		return
	}
	s := f.sent[0]
	f.sent = f.sent[1:]
	f.now = max(f.now, s+rtt)
	f.c.OnAck(f.now, time.Duration(f.now-s+noise), pktBytes, f.path, f.under)
	f.fill()
}

// run steps for d of time at a constant RTT.
func (f *flow) run(d, rtt int64) {
	for end := f.now + d; f.now < end; {
		f.step(rtt, 0)
	}
}

// warm brings a fresh controller out of slow start to the full window on a
// 10 µs path.
func warm(t *testing.T, c *Controller) *flow {
	t.Helper()
	f := newFlow(c, 1e9)
	f.run(300*us1, 10*us1)
	if !c.Bypass() || c.Window() != c.cfg.MaxWindow {
		t.Fatalf("not uncongested after warm-up: window %.2f", c.Window())
	}
	return f
}
