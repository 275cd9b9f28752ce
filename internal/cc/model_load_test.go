package cc

import (
	"os"
	"slices"
	"testing"
)

// starvedRun is the fleet benchmark's load in the model: four sessions
// each making small calls at an open-loop 2,000 a second to a server
// nowhere near a bottleneck, on a machine so loaded that both ends are
// descheduled for milliseconds at a time. The client's stalls (every 1 ms
// on average, up to 1 ms) hold its acknowledgements (the stall rule's
// case); the server's (every 3 ms, up to 1 ms) hold every packet that
// reaches it meanwhile (link 0 stops serving: to the client that is a
// queue). A packet unanswered for 1 ms (the engine's MinRTO) is given up
// and sent again. noise is added to every RTT sample: a client whose every
// wake-up is late measures each answer late.
func starvedRun(seed uint64, noise int64, nocc bool) *sim {
	return newSim(simConfig{
		seed: seed, senders: 4,
		links: []link{{tau: 100, prop: linkRTT}},
		dur:   4e9, measure: 1e9, jitter: noise, gcSender: -1,
		interarrival: 500e3,
		stallEvery:   1e6, stallMax: 1e6,
		linkStallEvery: 3e6, linkStallMax: 1e6,
		nocc: nocc, rto: 1e6,
	}).run()
}

// percentile of the measured calls' latency, in ms.
func (s *sim) percentile(q float64) float64 {
	l := slices.Clone(s.latency)
	slices.Sort(l)
	if len(l) == 0 {
		return 0
	}
	return float64(l[int(q*float64(len(l)-1))]) / 1e6
}

// checkStarved compares a run with congestion control against the same
// run without: the window must not fall so far that the sessions can no
// longer carry the offered load.
func checkStarved(t *testing.T, seed uint64, noise int64) {
	t.Helper()
	cc, free := starvedRun(seed, noise, false), starvedRun(seed, noise, true)
	minW, cuts, stalls, rtos := 32.0, 0, 0, 0
	for i := range cc.s {
		minW = min(minW, cc.s[i].minCwnd)
		cuts += cc.s[i].cuts
		stalls += cc.s[i].stalls
		rtos += cc.s[i].rtos
	}
	t.Logf("noise %.1f ms seed %d: %d client stalls, %d server stalls, %d timeouts; with cc p50 %.2f ms p99 %.2f ms (%d calls), window min %.2f, %d cuts; without p50 %.2f ms p99 %.2f ms (%d calls)",
		float64(noise)/1e6, seed, stalls, cc.linkStalls, rtos, cc.percentile(0.5), cc.percentile(0.99), len(cc.latency), minW, cuts,
		free.percentile(0.5), free.percentile(0.99), len(free.latency))
	if stalls < 1000 || cc.linkStalls < 500 || rtos == 0 {
		t.Fatalf("seed %d: only %d client stalls, %d server stalls, %d timeouts", seed, stalls, cc.linkStalls, rtos)
	}
	offered := 4 * float64(cc.cfg.dur-cc.cfg.measure) / float64(cc.cfg.interarrival)
	if float64(len(cc.latency)) < 0.95*offered {
		t.Errorf("seed %d: with cc only %d of %.0f calls done: the window fell below the offered load", seed, len(cc.latency), offered)
	}
	if cc.percentile(0.99) > 2*free.percentile(0.99)+5 {
		t.Errorf("seed %d: p99 %.2f ms with cc, %.2f ms without", seed, cc.percentile(0.99), free.percentile(0.99))
	}
}

// TestModelStarvedHost: host and server stalls and the timeouts they
// cause (the window falls, down to MinWindow in some runs) still leave
// the sessions carrying their load, within a few stalls' latency of the
// same run without congestion control.
func TestModelStarvedHost(t *testing.T) {
	for seed := uint64(1); seed <= seeds(4); seed++ {
		checkStarved(t, seed, 2000)
	}
}

// TestModelStarvedHostNoisy is the fleet benchmark's collapse (issue 33's
// investigation): the same run with up to 1 ms added to every sample.
// Every sample is then above the target, the filter (the lowest sample
// since the packet left) has only the packet's own sample below one
// packet of window, the window falls to MinWindow and the pacer, at
// srtt/0.1 with the inflated srtt, carries a fraction of the offered
// 2,000 calls a second: the calls queue for seconds. It fails today (with
// cc: p99 0.9 s and 94 % of the calls; before the link floor, none of
// them in the measured window; without cc: p99 2 ms), so it runs only with
// ERPC_MODEL_STARVED=1: the harness for the fix (receive timestamps from
// the kernel, see the package doc).
func TestModelStarvedHostNoisy(t *testing.T) {
	if os.Getenv("ERPC_MODEL_STARVED") == "" {
		t.Skip("known failure (issue 33, host noise in every sample): set ERPC_MODEL_STARVED=1 to run it")
	}
	for seed := uint64(1); seed <= seeds(4); seed++ {
		checkStarved(t, seed, 1e6)
	}
}
