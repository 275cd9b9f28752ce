package proto

import (
	"fmt"
	"testing"
)

// TestSimMigrationPace measures how fast a client's address may change
// for its calls to complete: the mean time between changes (each a new IP
// or port, at random moments, some far sooner than the mean) is k round
// trips of the seed's lossy link, for several k. Whatever the pace, no
// request runs twice and no call whose handler ran says ErrNotExecuted
// (runMigration checks both); from 8 round trips on, every call
// completes. Measured with 1000 seeds a pace: every 2 round trips 96.7 %
// of calls completed, every 3 99.75 %, every 4 or more all of them.
func TestSimMigrationPace(t *testing.T) {
	for _, k := range []float64{2, 4, 8, 16} {
		var tot migrationTotals
		t.Run(fmt.Sprintf("every%vRTT", k), func(t *testing.T) {
			forEachSeed(t, func(t *testing.T, seed uint64) {
				if seed%4 == 0 { // a quarter of the seeds: the runs are long
					runMigrationEvery(t, seed, &tot, false, k)
				}
			})
		})
		t.Logf("an address change every %v round trips on average: %d of %d calls completed; %v", k, tot.ok.Load(), tot.calls.Load(), &tot)
		if k >= 8 && tot.ok.Load() != tot.calls.Load() {
			t.Errorf("an address change every %v round trips: %d of %d calls failed", k, tot.calls.Load()-tot.ok.Load(), tot.calls.Load())
		}
	}
}
