package cc

import (
	"testing"
	"time"
)

// The scenarios below run the model of model_test.go. The link of the
// congestion scenarios is a 10 µs round trip plus 1 µs per packet (a 1472
// byte packet at ~12 Gbit/s): a bandwidth-delay product of 11 packets, so
// that even two sessions with 32 credits each overrun it, and 50 sessions
// have less than one packet each.

const (
	linkTau  = 1000
	linkProp = 10000
)

func bottleneck() []link { return []link{{tau: linkTau, prop: linkProp}} }

// seeds is how many seeds a model test runs: n, or a quarter of them under
// the race detector.
func seeds(n int) uint64 {
	if raceEnabled {
		return uint64(max(n/4, 1))
	}
	return uint64(n)
}

func TestModelConvergence(t *testing.T) {
	for _, n := range []int{2, 16, 50} {
		for seed := uint64(1); seed <= seeds(8); seed++ {
			s := newSim(simConfig{
				seed: seed, senders: n, links: bottleneck(),
				dur: 120e6, measure: 80e6,
				// Late starters join a queue that is already there.
				start:    func(i int) int64 { return int64(i) * 100e3 },
				jitter:   2000,
				gcSender: -1,
			}).run()
			j, u := jain(s.throughputs()), s.utilization(0)
			tq := s.targetQueue()
			cuts := 0
			for i := range s.s {
				cuts += s.s[i].cuts
				if s.s[i].cuts == 0 {
					t.Errorf("n=%d seed=%d: sender %d never cut its window", n, seed, i)
				}
			}
			t.Logf("n=%2d seed=%d: jain %.3f, utilization %.3f, queueing max %.1f µs mean %.1f µs (target %.1f µs, tolerated queueing %.1f µs), %d cuts",
				n, seed, j, u, us(s.maxQueue), us(s.meanQueue()), us(s.targetDelay()), us(tq), cuts)
			if s.maxQueueAll < 2*linkTau*int64(n) {
				t.Errorf("n=%d: the queue never built up (max %.1f µs): the link was not the bottleneck", n, us(s.maxQueueAll))
			}
			if j < 0.95 {
				t.Errorf("n=%d seed=%d: Jain index %.3f < 0.95", n, seed, j)
			}
			if u < 0.85 {
				t.Errorf("n=%d seed=%d: utilization %.3f < 0.85", n, seed, u)
			}
			// Each of n sessions adds a packet per RTT and the filter and the
			// feedback take an RTT each: the queue overshoots the target by
			// up to about 2n packets.
			if td := s.targetDelay(); s.maxQueue > 4*td || s.meanQueue() > 5*tq/2 {
				t.Errorf("n=%d seed=%d: queueing delay max %.1f µs mean %.1f µs, over 4x the target %.1f µs or 2.5x the tolerated %.1f µs",
					n, seed, us(s.maxQueue), us(s.meanQueue()), us(td), us(tq))
			}
		}
	}
}

var _ = time.Microsecond

// TestModelHostNoise: the link is far from full (two sessions of 32
// packets on a link of 200 packets per RTT), so the right window is the
// maximum throughout. The sessions' samples carry host noise: 2 µs of
// jitter, 5 % of samples 1 ms late (a timestamp taken after a preemption),
// stalls of up to 200 µs every 5 ms on average (late wake-ups), and
// session 0 stops for 2 ms every 20 ms (a GC pause: the acknowledgements of
// the pause are processed together at its end, every one of them up to
// 2 ms late). None of this may cut a window.
func TestModelHostNoise(t *testing.T) {
	const (
		dur, measure     = 200e6, 10e6
		gcEvery, gcPause = 20e6, 2e6
	)
	for seed := uint64(1); seed <= seeds(4); seed++ {
		s := newSim(simConfig{
			seed: seed, senders: 2,
			links: []link{{tau: 50, prop: linkProp}},
			dur:   dur, measure: measure,
			jitter: 2000, spikeProb: 0.05, spike: 1e6,
			stallEvery: 5e6, stallMax: 200e3,
			gcSender: 0, gcEvery: gcEvery, gcPause: gcPause,
		}).run()
		rtt := float64(linkProp + 50)
		for i := range s.s {
			sd := &s.s[i]
			acks := sd.ackedAll
			// What the model did to the samples: if it had not, the test
			// would prove nothing.
			if sd.spikes < acks*3/100 {
				t.Fatalf("sender %d: only %d of %d samples spiked", i, sd.spikes, acks)
			}
			if sd.overTgt < sd.spikes {
				t.Fatalf("sender %d: only %d raw samples above the target", i, sd.overTgt)
			}
			if i == 0 && sd.pauses < 9 || sd.stalls < 20 {
				t.Fatalf("sender %d paused only %d times, stalled %d times", i, sd.pauses, sd.stalls)
			}
			// Full rate: 32 packets per RTT, less the time paused.
			busy := 1.0
			if i == 0 {
				busy -= float64(gcPause) / gcEvery
			}
			ideal := busy * 32 * float64(dur-measure) / rtt
			frac := float64(sd.acked) / ideal
			t.Logf("seed %d sender %d: %d samples, %d spiked, %d pauses, %d stalls, %d raw samples above target; window min %.1f, %d cuts, %.3f of full rate",
				seed, i, acks, sd.spikes, sd.pauses, sd.stalls, sd.overTgt, sd.minCwnd, sd.cuts, frac)
			if sd.cuts != 0 || sd.minCwnd != 32 || sd.notBypass != 0 {
				t.Errorf("seed %d sender %d: host noise throttled the window: %d cuts, min %.2f, %d samples out of bypass",
					seed, i, sd.cuts, sd.minCwnd, sd.notBypass)
			}
			if frac < 0.95 {
				t.Errorf("seed %d sender %d: %.3f of full rate", seed, i, frac)
			}
		}
	}
}

// TestModelBurstRecovery: one long-lived session has the link to itself
// when 15 new sessions start at once with 200 packets each (an incast).
// The burst must complete close to its fair-share ideal, the queue must stay
// bounded while it lasts, and the long-lived session must take the whole
// link back soon after.
func TestModelBurstRecovery(t *testing.T) {
	const (
		burstAt = 20e6
		n, pkts = 16, 200
	)
	for seed := uint64(1); seed <= seeds(4); seed++ {
		var m *sim
		var doneAt int64 // when the last burst session finished
		var after int    // long-lived packets acknowledged in the window after
		var winAfter float64
		m = newSim(simConfig{
			seed: seed, senders: n, links: bottleneck(),
			dur: 40e6, measure: burstAt,
			start: func(i int) int64 {
				if i == 0 {
					return 0
				}
				return burstAt + int64(i)*100 // within a packet time of each other
			},
			pkts: func(i int) int {
				if i == 0 {
					return -1
				}
				return pkts
			},
			jitter: 2000, gcSender: -1,
			every: 100e3,
			trace: func(s *sim) {
				if doneAt == 0 {
					done := int64(0)
					for i := 1; i < n; i++ {
						if s.s[i].done == 0 {
							return
						}
						done = max(done, s.s[i].done)
					}
					doneAt = done
					after = -s.s[0].ackedAll
				}
				if s.now == doneAt/100e3*100e3+5e6 {
					after += s.s[0].ackedAll
					winAfter = s.s[0].c.Window()
				}
			},
		})
		m.run()
		if doneAt == 0 {
			t.Fatalf("seed %d: the burst did not complete", seed)
		}
		fct := doneAt - burstAt
		ideal := int64(n * pkts * linkTau) // every session a fair share
		// The long-lived session's rate over the 5 ms that follow the burst,
		// as a fraction of the link.
		end := doneAt/100e3*100e3 + 5e6
		rate := float64(after) * linkTau / float64(end-doneAt/100e3*100e3)
		t.Logf("seed %d: burst done in %.2f ms (ideal %.2f ms, %.2fx); queueing from the burst on max %.1f µs mean %.1f µs (target %.1f µs); afterwards the long session has %.2f of the link, window %.1f",
			seed, float64(fct)/1e6, float64(ideal)/1e6, float64(fct)/float64(ideal), us(m.maxQueue), us(m.meanQueue()), us(m.targetDelay()), rate, winAfter)
		if m.maxQueue < 20*linkTau {
			t.Errorf("seed %d: the burst built no queue (max %.1f µs)", seed, us(m.maxQueue))
		}
		if float64(fct) > 1.3*float64(ideal) {
			t.Errorf("seed %d: burst took %.2fx its ideal time", seed, float64(fct)/float64(ideal))
		}
		if rate < 0.9 {
			t.Errorf("seed %d: the long-lived session got %.2f of the link back", seed, rate)
		}
	}
}

// TestModelRandomLoss: 1 % of packets are lost at random, on a link that is
// the bottleneck (four sessions) and on one that is not (one session, so
// the window is the limit). Loss that the delay does not confirm must not
// cut the window: throughput stays within 10 % of the lossless run.
func TestModelRandomLoss(t *testing.T) {
	cases := []struct {
		name    string
		senders int
		tau     int64
	}{
		{"bottleneck", 4, linkTau},
		{"window-limited", 1, 50},
	}
	for _, tc := range cases {
		for seed := uint64(1); seed <= seeds(4); seed++ {
			run := func(loss float64) *sim {
				return newSim(simConfig{
					seed: seed, senders: tc.senders,
					links: []link{{tau: tc.tau, prop: linkProp, loss: loss}},
					dur:   60e6, measure: 20e6, jitter: 2000, gcSender: -1,
				}).run()
			}
			clean, lossy := run(0), run(0.01)
			var got, want float64
			timeouts, cuts, cleanCuts := 0, 0, 0
			for i := range lossy.s {
				got += float64(lossy.s[i].acked)
				want += float64(clean.s[i].acked)
				timeouts += lossy.s[i].timeouts
				cuts += lossy.s[i].cuts
				cleanCuts += clean.s[i].cuts
			}
			sent := float64(lossy.lost)
			for i := range lossy.s {
				sent += float64(lossy.s[i].ackedAll)
			}
			t.Logf("%s seed %d: %d losses reported (%.2f %%), throughput %.3f of lossless; %d cuts (lossless %d)",
				tc.name, seed, timeouts, 100*float64(lossy.lost)/sent, got/want, cuts, cleanCuts)
			if float64(timeouts) < 0.005*sent {
				t.Fatalf("%s seed %d: only %d losses in %.0f packets", tc.name, seed, timeouts, sent)
			}
			if got < 0.9*want {
				t.Errorf("%s seed %d: 1 %% loss cut throughput to %.3f of lossless", tc.name, seed, got/want)
			}
			if tc.senders == 1 && cuts != 0 {
				t.Errorf("%s seed %d: random loss on an idle link cut the window %d times", tc.name, seed, cuts)
			}
		}
	}
}

// TestModelMultipath: one session over two paths, one of which has a fifth
// of the other's rate (network.md's two-path test: 200 Mbit and 1 Gbit).
// Path choice by queueing delay with the median rule must come close to
// the sum of the two rates; blind round robin is held to twice the slow
// path's rate. With four paths of which one is slow, the slow path must
// not cut the session's window: it is avoided instead.
func TestModelMultipath(t *testing.T) {
	const slow, fast = 5 * linkTau, linkTau
	run := func(seed uint64, rr bool, links []link) *sim {
		return newSim(simConfig{
			seed: seed, senders: 1, cc: Config{RoundRobin: rr},
			links: links, dur: 60e6, measure: 20e6, jitter: 2000, gcSender: -1,
		}).run()
	}
	rate := func(s *sim) float64 { // packets per µs
		return float64(s.s[0].acked) / float64(s.cfg.dur-s.cfg.measure) * 1e3
	}
	for seed := uint64(1); seed <= seeds(4); seed++ {
		two := []link{{tau: slow, prop: linkProp}, {tau: fast, prop: linkProp}}
		chosen, spray := run(seed, false, two), run(seed, true, two)
		sum := 1e3/slow + 1e3/fast
		t.Logf("seed %d, 2 paths: chosen %.3f pkt/µs (%.2f of the sum of the paths; %.0f %% on the slow path), round robin %.3f (%.2f): %.1fx",
			seed, rate(chosen), rate(chosen)/sum, 100*float64(chosen.s[0].perPath[0])/float64(chosen.s[0].perPath[0]+chosen.s[0].perPath[1]),
			rate(spray), rate(spray)/sum, rate(chosen)/rate(spray))
		if chosen.maxQueueAll < slow {
			t.Fatalf("seed %d: no queue on the slow path", seed)
		}
		if rate(chosen) < 0.8*sum {
			t.Errorf("seed %d: chosen paths reach %.2f of the paths' sum", seed, rate(chosen)/sum)
		}
		if rate(chosen) < 2.5*rate(spray) {
			t.Errorf("seed %d: path choice only %.2fx round robin", seed, rate(chosen)/rate(spray))
		}

		// Four paths, each far from full with the session's 32 packets
		// (so the window, not the paths, is the limit), but one slow.
		four := []link{{tau: 50, prop: linkProp}, {tau: 50, prop: linkProp}, {tau: 20 * fast, prop: linkProp}, {tau: 50, prop: linkProp}}
		s := run(seed, false, four)
		full := 32 * 1e3 / float64(linkProp+50)
		onSlow := float64(s.s[0].perPath[2]) / float64(s.s[0].perPath[0]+s.s[0].perPath[1]+s.s[0].perPath[2]+s.s[0].perPath[3])
		t.Logf("seed %d, 4 paths, one slow: %.3f pkt/µs (%.2f of the window's rate), %.1f %% on the slow path, window min %.1f, %d cuts",
			seed, rate(s), rate(s)/full, 100*onSlow, s.s[0].minCwnd, s.s[0].cuts)
		if s.s[0].perPath[2] == 0 {
			t.Fatalf("seed %d: the slow path was never tried", seed)
		}
		if rate(s) < 0.9*full || onSlow > 0.05 {
			t.Errorf("seed %d: one slow path of four: %.2f of the window's rate, %.1f %% on it", seed, rate(s)/full, 100*onSlow)
		}
	}
}
