package erpc

import (
	"runtime"
	"sync"
	"testing"
)

// TestLoopGIdentifiesGoroutine attacks what startOnLoop relies on: loopG
// is the same for one goroutine however its stack moves (a deep recursion
// copies it to a larger one) and whichever thread runs it, and differs
// between goroutines alive at once. Off the platforms with loopG it is 0,
// which startOnLoop never takes for the loop.
func TestLoopGIdentifiesGoroutine(t *testing.T) {
	if loopG() == 0 {
		if runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
			t.Fatal("loopG is 0 on a platform that has it")
		}
		t.Skip("no loopG on this platform: calls on the loop take the queue")
	}
	const n = 200
	ids := make([]uintptr, n)
	var ready, release sync.WaitGroup
	ready.Add(n)
	release.Add(1)
	errs := make(chan string, 2*n) // two checks per goroutine: never blocks
	for i := range n {
		go func() {
			g := loopG()
			if deepStack(2000) != g { // the stack grows and moves meanwhile
				errs <- "loopG changed when the stack grew"
			}
			runtime.Gosched() // perhaps another thread
			if loopG() != g {
				errs <- "loopG changed after a yield"
			}
			ids[i] = g
			ready.Done()
			release.Wait() // all alive at once
		}()
	}
	ready.Wait()
	release.Done()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	seen := make(map[uintptr]bool, n+1)
	seen[loopG()] = true
	for _, g := range ids {
		if g == 0 || seen[g] {
			t.Fatalf("loopG %#x is 0 or shared by two live goroutines", g)
		}
		seen[g] = true
	}
}

// deepStack recurses depth frames with a sizeable frame each, then
// returns loopG from the bottom.
//
//go:noinline
func deepStack(depth int) uintptr {
	var pad [64]byte
	if depth == 0 {
		return loopG()
	}
	g := deepStack(depth - 1)
	touchPad(&pad) // keeps the frame's array
	return g
}

//go:noinline
func touchPad(p *[64]byte) { p[0]++ }
