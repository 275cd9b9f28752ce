package proto

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
)

var (
	simSeeds = flag.Int("sim.seeds", envInt("ERPC_SIM_SEEDS", 1000), "number of seeds each property test runs (default $ERPC_SIM_SEEDS or 1000)")
	simSeed  = flag.Int64("sim.seed", -1, "run only this seed (to replay a failure)")
	simLog   = flag.Bool("sim.log", false, "log a summary of every seed")
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// forEachSeed runs fn for -sim.seeds seeds (or the one -sim.seed names),
// in eight parallel groups.
func forEachSeed(t *testing.T, fn func(t *testing.T, seed uint64)) {
	seeds := make([]uint64, 0, *simSeeds)
	if *simSeed >= 0 {
		seeds = append(seeds, uint64(*simSeed))
	} else {
		for i := range *simSeeds {
			seeds = append(seeds, uint64(i))
		}
	}
	const groups = 8
	for g := range groups {
		t.Run(fmt.Sprintf("group%d", g), func(t *testing.T) {
			t.Parallel()
			for i := g; i < len(seeds); i += groups {
				fn(t, seeds[i])
			}
		})
	}
}

// forSeeds runs a scenario of kind for every seed and returns when all are
// done; check sees each seed's result.
func forSeeds(t *testing.T, kind string, check func(t *testing.T, sc scenario, r simResult)) {
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) {
			sc := genScenario(seed, kind)
			r := runScenario(t, sc)
			if check != nil {
				check(t, sc, r)
			}
		})
	})
}

// simTotals sums results over all seeds, so that each property test can
// check that the fault it is about really happened: a fault made into a
// no-op (admission that always succeeds, a Cancel that does nothing, a
// network that never drops) must fail the test, not pass it vacuously.
type simTotals struct {
	seeds, ok, canceled, overloaded, failed, sessionsDown, retransmits, nacks, serverCancels atomic.Int64
}

func (s *simTotals) add(r simResult) {
	s.seeds.Add(1)
	s.ok.Add(int64(r.ok))
	s.canceled.Add(int64(r.canceled))
	s.overloaded.Add(int64(r.overloaded))
	s.failed.Add(int64(r.failed))
	s.sessionsDown.Add(int64(r.sessionsDown))
	s.retransmits.Add(int64(r.retransmits))
	s.nacks.Add(int64(r.nacks))
	s.serverCancels.Add(int64(r.serverCancels))
}

// require fails t unless every named total is positive (with enough seeds
// for that to be expected).
func (s *simTotals) require(t *testing.T, names ...string) {
	t.Helper()
	if t.Failed() || s.seeds.Load() < 50 {
		return
	}
	all := map[string]int64{
		"successful calls": s.ok.Load(), "canceled calls": s.canceled.Load(), "NACKed calls": s.overloaded.Load(),
		"failed calls": s.failed.Load(), "failed sessions": s.sessionsDown.Load(), "retransmissions": s.retransmits.Load(),
		"NACKs sent": s.nacks.Load(), "requests canceled at the server": s.serverCancels.Load(),
	}
	for _, n := range names {
		if all[n] == 0 {
			t.Errorf("no %s in %d seeds: the test does not exercise what it is about", n, s.seeds.Load())
		}
	}
	t.Logf("%d seeds: %v", s.seeds.Load(), all)
}

// TestSimProperty: lossy, duplicating, reordering networks; every call
// completes exactly once with the right bytes.
func TestSimProperty(t *testing.T) {
	var tot simTotals
	forSeeds(t, "", func(t *testing.T, sc scenario, r simResult) { tot.add(r) })
	tot.require(t, "successful calls", "retransmissions")
}

// TestSimLean: the lean path (Config.Reliable) over a network that keeps
// the promise: every call completes exactly once with the right bytes, a
// third of them canceled at random moments, slow handlers included, and
// nothing is ever sent twice.
func TestSimLean(t *testing.T) {
	var tot simTotals
	forSeeds(t, "lean", func(t *testing.T, sc scenario, r simResult) {
		tot.add(r)
		if r.retransmits != 0 {
			t.Errorf("seed %d: %d retransmissions on the lean path over a reliable network", sc.seed, r.retransmits)
		}
	})
	tot.require(t, "successful calls", "canceled calls")
}

// TestSimCancel: clients cancel a third of their calls at random moments;
// the session stays usable and nothing leaks.
func TestSimCancel(t *testing.T) {
	var tot simTotals
	forSeeds(t, "cancel", func(t *testing.T, sc scenario, r simResult) { tot.add(r) })
	tot.require(t, "successful calls", "canceled calls", "requests canceled at the server")
}

// TestSimPartition: the network goes down for 50 to 600 ms against a
// failure timeout of 200 ms: sessions may fail, and then exactly their
// pending calls fail, once each, and both sides free their state.
func TestSimPartition(t *testing.T) {
	var tot simTotals
	forSeeds(t, "partition", func(t *testing.T, sc scenario, r simResult) { tot.add(r) })
	tot.require(t, "successful calls", "failed calls", "failed sessions")
}

// TestSimOverload: a server that holds at most a few requests refuses the
// rest with NACKs; refused calls fail fast and their handlers never run.
func TestSimOverload(t *testing.T) {
	var tot simTotals
	forSeeds(t, "overload", func(t *testing.T, sc scenario, r simResult) {
		tot.add(r)
		if r.overloaded > 0 && r.nacks == 0 {
			t.Fatalf("seed %d: %d calls overloaded but the server sent no NACK", sc.seed, r.overloaded)
		}
	})
	tot.require(t, "successful calls", "NACKed calls", "NACKs sent")
}
