package erpc_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestBusyLoopSharesCPU: with GOMAXPROCS 1, an endpoint whose loop has
// work on every turn (a posted function that posts itself again) still
// lets the process's other goroutines run between its turns. Go preempts
// a goroutine that never yields only every 10 ms, so without the loop's
// yield the other goroutine below ran about once per 10 ms (some 20 times
// in 200 ms); with it, thousands of times. In erpc-bench's incast this
// starvation held 15 of 16 sender loops for 4-5 ms while one sender had
// the bottleneck to itself.
func TestBusyLoopSharesCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 200 ms")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ep := newMemNet().Listen(t, nil)
	var stop atomic.Bool
	turns := 0 // touched only on ep's loop
	var again func()
	again = func() {
		turns++
		if !stop.Load() {
			_ = ep.Post(again)
		}
	}
	if err := ep.Post(again); err != nil {
		t.Fatal(err)
	}
	var others atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			others.Add(1)
			runtime.Gosched()
		}
	}()
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	<-done
	loopTurns := make(chan int)
	if err := ep.Post(func() { loopTurns <- turns }); err != nil {
		t.Fatal(err)
	}
	n := <-loopTurns
	t.Logf("in 200 ms: %d posted functions on the loop, %d turns of the other goroutine", n, others.Load())
	if n < 1000 {
		t.Fatalf("the loop ran only %d posted functions: it was not kept busy", n)
	}
	if o := others.Load(); o < 100 {
		t.Fatalf("the other goroutine ran %d times in 200 ms beside a busy loop: starved", o)
	}
}
