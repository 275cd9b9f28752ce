package shm_test

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport/shm"
)

// TestSleepersHoldNoThread: transports sleeping in Wait are parked in the
// Go netpoller, not blocked in a system call each on a thread of its own
// (which, with GOMAXPROCS 1, also held the only P until the runtime's
// monitor took it back).
func TestSleepersHoldNoThread(t *testing.T) {
	const n = 16
	trs := make([]*shm.Transport, n)
	for i := range trs {
		trs[i] = listen(t, "", shm.Options{})
	}
	before := threads(t)
	var wg sync.WaitGroup
	for _, tr := range trs {
		wg.Go(func() { tr.Wait(time.Time{}) })
	}
	time.Sleep(100 * time.Millisecond) // let them all go to sleep
	during := threads(t)
	for _, tr := range trs {
		tr.Wake()
	}
	wg.Wait()
	if during-before >= n/2 {
		t.Fatalf("%d sleeping transports added %d threads (%d -> %d)", n, during-before, before, during)
	}
}

// threads is the number of threads of this process.
func threads(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("cannot count threads: %v", err)
	}
	return len(ents)
}
