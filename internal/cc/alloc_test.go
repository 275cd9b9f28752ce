package cc

import (
	"testing"
	"time"
)

// packet is the controller's work for one packet as the engine will do it:
// the bypass branch, and otherwise the window and the pacer; the path; the
// send; the acknowledgement.
func packet(c *Controller, now int64, rnd uint64, rtt time.Duration) int {
	n := 0
	if !c.Bypass() {
		n = c.Allowed()
		if c.NextSend(now) > now {
			n++
		}
	}
	p := 0
	if c.Paths() > 1 {
		p = c.PickPath(now, rnd)
	}
	c.OnSend(now, pktBytes, p)
	c.OnAck(now+int64(rtt), rtt, pktBytes, p, false)
	return n
}

// steady returns a controller after some traffic on paths paths: congested
// (window below the maximum) or not.
func steady(paths int, congested bool) (*Controller, int64) {
	c := new(Controller)
	c.Init(Config{}, paths)
	now := int64(1e9)
	for i := 0; i < 20000; i++ {
		now += 300
		rtt := 10 * time.Microsecond
		if congested && i > 10000 {
			rtt = 40 * time.Microsecond
		}
		packet(c, now, uint64(i)*0x9e3779b97f4a7c15, rtt)
	}
	return c, now
}

func TestAllocs(t *testing.T) {
	for _, paths := range []int{1, 4, 64} {
		for _, congested := range []bool{false, true} {
			c, now := steady(paths, congested)
			if c.Bypass() == congested {
				t.Fatalf("%d paths: bypass %v, want %v", paths, c.Bypass(), !congested)
			}
			i := uint64(0)
			n := testing.AllocsPerRun(1000, func() {
				now += 300
				i++
				rtt := 10 * time.Microsecond
				if congested {
					rtt = 40 * time.Microsecond
				}
				packet(c, now, i*0x9e3779b97f4a7c15, rtt)
				c.RetransmitPath(now, int(i)%paths, i)
				if i%100 == 0 {
					c.OnTimeout(now, int(i)%paths)
				}
			})
			if n != 0 {
				t.Errorf("%d paths, congested %v: %v allocations per packet", paths, congested, n)
			}
		}
	}
}

// BenchmarkPacket is the controller's cost per packet (see packet): the
// engine's fast path when uncongested, and the whole of it when congested.
func BenchmarkPacket(b *testing.B) {
	for _, bc := range []struct {
		name      string
		paths     int
		congested bool
	}{
		{"1path/uncongested", 1, false},
		{"1path/congested", 1, true},
		{"4paths/uncongested", 4, false},
		{"4paths/congested", 4, true},
		{"64paths/congested", 64, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, now := steady(bc.paths, bc.congested)
			rtt := 10 * time.Microsecond
			if bc.congested {
				rtt = 40 * time.Microsecond
			}
			b.ReportAllocs()
			var rnd uint64
			for b.Loop() {
				now += 300
				rnd += 0x9e3779b97f4a7c15
				packet(c, now, rnd, rtt)
			}
		})
	}
}

// BenchmarkBypass is the engine's check on an uncongested session.
func BenchmarkBypass(b *testing.B) {
	c, _ := steady(1, false)
	n := 0
	for b.Loop() {
		if !c.Bypass() {
			n++
		}
	}
	if n != 0 {
		b.Fatal("congested")
	}
}
