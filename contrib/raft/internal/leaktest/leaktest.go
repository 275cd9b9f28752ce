// Package leaktest checks, for contrib/raft's tests, that what a test
// started has stopped: the goroutine count comes back to what it was.
package leaktest

import (
	"runtime"
	"testing"
	"time"
)

// Wait fails t unless the number of goroutines falls back to before within
// five seconds (goroutines may take a moment to return after a Close); the
// failure lists every goroutine's stack.
func Wait(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
