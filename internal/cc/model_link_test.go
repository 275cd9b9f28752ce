package cc

import (
	"fmt"
	"testing"
)

// The scenarios below put sessions on links of every speed, from 10 Mbit/s
// (a full packet takes 1.2 ms to cross) to 10 Gbit/s (1.2 µs), behind a
// 30 µs round trip: on the slow ones one packet's serialization is far
// longer than the tolerated queueing of the fast ones (QueueFloor, a
// quarter of the base), and only the link floor lets a window keep the
// link busy.

const linkRTT = 30e3 // round-trip propagation of the link scenarios, ns

// tauAt is the time a full packet takes to cross a link of mbit Mbit/s.
func tauAt(mbit float64) int64 { return int64(pktBytes * 8 * 1e3 / mbit) }

// shaped is a link of mbit Mbit/s: a FIFO served at that rate, or with
// tbf a token-bucket shaper as the test bed's (a burst of 2 ms of the
// rate, at least 16 KiB, leaving at a veth's pace), where a packet that
// finds tokens crosses in a microsecond and the base RTT holds no
// serialization at all.
func shaped(mbit float64, tbf bool) link {
	l := link{tau: tauAt(mbit), prop: linkRTT}
	if tbf {
		l.burst = max(16<<10, mbit*1e6/8/500) / pktBytes
		l.line = 1000
	}
	return l
}

var shapers = []struct {
	name string
	tbf  bool
}{{"fifo", false}, {"tbf", true}}

// linkRun runs n sessions for long enough to send about 8,000 packets
// over the link (linkRunWith: pkts), measuring the second half.
func linkRun(seed uint64, n int, links []link) *sim {
	return linkRunWith(seed, n, links, linkCfg, 8000)
}

// linkCfg is the configuration of the link scenarios. (Setting
// LinkFloorMax to 1 ns turns the link floor off: the figures before it.)
var linkCfg Config

func linkRunWith(seed uint64, n int, links []link, cfg Config, pkts int64) *sim {
	slowest := int64(0)
	for _, l := range links {
		slowest = max(slowest, l.tau)
	}
	dur := pkts * slowest
	return newSim(simConfig{
		seed: seed, senders: n, links: links, cc: cfg,
		dur: dur, measure: dur / 2, jitter: 2000, gcSender: -1,
		start: func(i int) int64 { return int64(i) * 10 * slowest },
	}).run()
}

// TestModelLinkSpeeds: one session alone on a link of each speed keeps it
// busy (utilisation >= 0.9), with a queue that shows the link was the
// bottleneck, and the packet-pair estimate finds the link's packet time.
func TestModelLinkSpeeds(t *testing.T) {
	for _, sh := range shapers {
		for _, mbit := range []float64{10, 50, 250, 1000, 10000} {
			for seed := uint64(1); seed <= seeds(4); seed++ {
				tau := tauAt(mbit)
				s := linkRun(seed, 1, []link{shaped(mbit, sh.tbf)})
				u := s.utilization(0)
				c := &s.s[0].c
				t.Logf("%s %5.0f Mbit/s seed %d: utilisation %.3f, packet %.1f µs (estimate %.1f µs), queueing max %.1f µs mean %.1f µs, target %.1f µs over base %.1f µs, window %.2f-%.2f, %d cuts",
					sh.name, mbit, seed, u, us(tau), us(int64(c.PacketTime(0))), us(s.maxQueue), us(s.meanQueue()),
					us(int64(c.Target(0))), us(int64(c.BaseRTT(0))), s.s[0].minCwnd, s.s[0].maxCwnd, s.s[0].cuts)
				bdp := float64(linkRTT+tau) / float64(tau)
				if bdp < 32 && s.maxQueueAll < tau {
					t.Errorf("%s %.0f Mbit/s seed %d: no queue built (max %.1f µs): the link was not the bottleneck", sh.name, mbit, seed, us(s.maxQueueAll))
				}
				if u < 0.9 {
					t.Errorf("%s %.0f Mbit/s seed %d: utilisation %.3f < 0.9", sh.name, mbit, seed, u)
				}
			}
		}
	}
}

// TestModelLinkShare: four sessions sharing one link of each speed reach
// fair shares (Jain >= 0.95) and keep it busy.
func TestModelLinkShare(t *testing.T) {
	for _, sh := range shapers {
		for _, mbit := range []float64{10, 50, 250, 1000} {
			for seed := uint64(1); seed <= seeds(4); seed++ {
				tau := tauAt(mbit)
				// Fairness takes a few hundred RTTs to show: 4,000 packets each.
				s := linkRunWith(seed, 4, []link{shaped(mbit, sh.tbf)}, linkCfg, 32000)
				j, u := jain(s.throughputs()), s.utilization(0)
				cuts := 0
				for i := range s.s {
					cuts += s.s[i].cuts
				}
				t.Logf("%s %5.0f Mbit/s seed %d: jain %.3f, utilisation %.3f, queueing max %.1f µs mean %.1f µs, %d cuts",
					sh.name, mbit, seed, j, u, us(s.maxQueue), us(s.meanQueue()), cuts)
				if s.maxQueueAll < 2*tau {
					t.Errorf("%s %.0f Mbit/s seed %d: no queue built (max %.1f µs)", sh.name, mbit, seed, us(s.maxQueueAll))
				}
				if j < 0.95 || u < 0.9 {
					t.Errorf("%s %.0f Mbit/s seed %d: Jain %.3f, utilisation %.3f", sh.name, mbit, seed, j, u)
				}
			}
		}
	}
}

// TestModelUnequalPaths: one session over two paths of 50 and 250 Mbit/s
// (the test bed's multipath topology) moves at least 0.9 of their sum:
// the slow path does not hold the fast one down.
func TestModelUnequalPaths(t *testing.T) {
	for seed := uint64(1); seed <= seeds(4); seed++ {
		links := []link{shaped(50, true), shaped(250, true)}
		s := linkRun(seed, 1, links)
		got := float64(s.delivered[0]+s.delivered[1]) / float64(s.cfg.dur-s.cfg.measure)
		sum := 1/float64(links[0].tau) + 1/float64(links[1].tau)
		sd := &s.s[0]
		t.Logf("seed %d: %.3f of the paths' sum (slow %.3f, fast %.3f utilised), window %.2f-%.2f, %d cuts, packet estimates %s",
			seed, got/sum, s.utilization(0), s.utilization(1), sd.minCwnd, sd.maxCwnd, sd.cuts,
			fmt.Sprint(sd.c.PacketTime(0), " ", sd.c.PacketTime(1)))
		if sd.perPath[0] == 0 || s.maxQueueAll < links[1].tau {
			t.Fatalf("seed %d: the slow path was never used, or no queue built", seed)
		}
		if got < 0.9*sum {
			t.Errorf("seed %d: %.3f of the two paths' capacity", seed, got/sum)
		}
	}
}

// lateTimer is the mean lateness of the shaper's timer in the late-timer
// scenarios: on the loaded test bed the TBF's watchdog ran tens to
// hundreds of microseconds late and let the queue out in clumps.
var lateTimer = []int64{30e3, 100e3}

// TestModelLinkLateTimer: one session alone on a TBF whose timer fires
// late (see link.late) keeps it busy at 50 Mbit/s to 1 Gbit/s, and its
// packet-time estimate is not dragged below the link's by the clumps:
// within [0.7, 1.5] of a full packet's time.
func TestModelLinkLateTimer(t *testing.T) {
	for _, late := range lateTimer {
		for _, mbit := range []float64{50, 250, 1000} {
			for seed := uint64(1); seed <= seeds(4); seed++ {
				tau := tauAt(mbit)
				l := shaped(mbit, true)
				l.late = late
				s := linkRun(seed, 1, []link{l})
				u := s.utilization(0)
				c := &s.s[0].c
				est := float64(c.PacketTime(0)) / float64(tau)
				t.Logf("late %3.0f µs %5.0f Mbit/s seed %d: utilisation %.3f, estimate %.2f of the packet time, queueing max %.1f µs mean %.1f µs, target %.1f µs over base %.1f µs, window %.2f-%.2f, %d cuts",
					us(late), mbit, seed, u, est, us(s.maxQueue), us(s.meanQueue()),
					us(int64(c.Target(0))), us(int64(c.BaseRTT(0))), s.s[0].minCwnd, s.s[0].maxCwnd, s.s[0].cuts)
				if s.maxQueueAll < late {
					t.Errorf("late %.0f µs %.0f Mbit/s seed %d: no queue built (max %.1f µs): the timer never held a packet", us(late), mbit, seed, us(s.maxQueueAll))
				}
				if u < 0.9 || est < 0.7 || est > 1.5 {
					t.Errorf("late %.0f µs %.0f Mbit/s seed %d: utilisation %.3f, estimate %.2f of the packet time", us(late), mbit, seed, u, est)
				}
			}
		}
	}
}

// TestModelLateTimerShared: the late shaper timer beside sharing: four
// sessions on one such path reach fair shares and keep it busy, and one
// session over two such paths of 50 and 250 Mbit/s moves 0.9 of their
// sum (the test bed's path and multipath scenarios, in the model). On
// the old estimator (the lowest pair) the four sessions at 50 Mbit/s
// with the timer 30 µs late reached Jain 0.72-0.99, the two paths
// 0.86-0.94 of their sum. The limit: a timer late by two packet times on
// average (100 µs at 250 Mbit/s) widens more than half the pairs, the
// four estimates differ (1.1-2.5 packet times) and Jain is 0.89-0.98
// there; only utilisation is asserted for that case.
func TestModelLateTimerShared(t *testing.T) {
	for _, late := range lateTimer {
		for _, mbit := range []float64{50, 250} {
			for seed := uint64(1); seed <= seeds(4); seed++ {
				l := shaped(mbit, true)
				l.late = late
				s := linkRunWith(seed, 4, []link{l}, linkCfg, 32000)
				j, u := jain(s.throughputs()), s.utilization(0)
				t.Logf("late %3.0f µs %4.0f Mbit/s x4 seed %d: jain %.3f, utilisation %.3f, estimates %v %v %v %v",
					us(late), mbit, seed, j, u, s.s[0].c.PacketTime(0), s.s[1].c.PacketTime(0), s.s[2].c.PacketTime(0), s.s[3].c.PacketTime(0))
				if s.maxQueueAll < late {
					t.Errorf("late %.0f µs %.0f Mbit/s seed %d: no queue built", us(late), mbit, seed)
				}
				limit := float64(late) > 1.5*float64(tauAt(mbit)) // see the limit above
				if (j < 0.95 && !limit) || u < 0.9 {
					t.Errorf("late %.0f µs %.0f Mbit/s x4 seed %d: Jain %.3f, utilisation %.3f", us(late), mbit, seed, j, u)
				}
			}
		}
		for seed := uint64(1); seed <= seeds(4); seed++ {
			links := []link{shaped(50, true), shaped(250, true)}
			links[0].late, links[1].late = late, late
			s := linkRun(seed, 1, links)
			got := float64(s.delivered[0]+s.delivered[1]) / float64(s.cfg.dur-s.cfg.measure)
			sum := 1/float64(links[0].tau) + 1/float64(links[1].tau)
			t.Logf("late %3.0f µs, 50 + 250 Mbit/s seed %d: %.3f of the sum (slow %.3f, fast %.3f), estimates %v %v",
				us(late), seed, got/sum, s.utilization(0), s.utilization(1), s.s[0].c.PacketTime(0), s.s[0].c.PacketTime(1))
			if s.s[0].perPath[0] == 0 {
				t.Fatalf("seed %d: the slow path was never used", seed)
			}
			if got < 0.9*sum {
				t.Errorf("late %.0f µs, 50 + 250 Mbit/s seed %d: %.3f of the two paths' capacity", us(late), seed, got/sum)
			}
		}
	}
}
