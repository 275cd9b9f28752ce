package erpc

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHandleRefsSaturated: a request's references have 12 bits below its
// 48-bit generation. When all are taken, a handle's accessor must neither
// carry into the generation (which would turn every handle to the request
// spent, or a spent one live) nor return a wrong value: it waits for a
// reader to let go. First with every reference taken (the accessor must
// wait, and the word stay as it was), then with readers hammering a
// request one reference short of the limit, each read checked and the
// saturated word seen by an observer (counted).
func TestHandleRefsSaturated(t *testing.T) {
	const gen = genLast - 1 // high generation bits set: a carry would show
	r := &request{data: []byte("the request")}
	base := uint64(gen)<<genShift | 2*refOne | phOutGiven // the run's and the answer's references
	r.state.Store(base)
	q := Request{r: r, gen: gen}
	full := base + (refMask>>refShift-2)*refOne
	r.state.Store(full)
	if full&refMask != refMask || full>>genShift != gen {
		t.Fatalf("the saturated word %#x is not what the test means", full)
	}
	got := make(chan []byte, 1)
	go func() { got <- q.Data() }()
	select {
	case d := <-got:
		t.Fatalf("Data returned %q with every reference taken", d)
	case <-time.After(20 * time.Millisecond):
	}
	if s := r.state.Load(); s != full {
		t.Fatalf("a read with every reference taken changed the word from %#x to %#x", full, s)
	}
	r.state.Add(^uint64(refOne - 1)) // a reader lets go
	if d := <-got; string(d) != "the request" {
		t.Fatalf("Data after a reference was freed: %q", d)
	}
	short := full - refOne
	if s := r.state.Load(); s != short {
		t.Fatalf("after the waiting read the word is %#x, want %#x", s, short)
	}

	// Readers one reference short of the limit: each read saturates the
	// count, and concurrent ones wait for each other.
	var saturated atomic.Int64
	stop := make(chan struct{})
	var observer sync.WaitGroup
	observer.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r.state.Load()&refMask == refMask {
				saturated.Add(1)
			}
		}
	})
	var readers sync.WaitGroup
	var wrong atomic.Int64
	// The readers go on until the observer has seen the saturated word a
	// few times (or 10 s pass): on a loaded machine the observer may not
	// run at all during a fixed number of reads.
	deadline := time.Now().Add(10 * time.Second)
	for range 8 {
		readers.Go(func() {
			for i := 0; i < 5000 || saturated.Load() < 100 && time.Now().Before(deadline); i++ {
				if string(q.Data()) != "the request" {
					wrong.Add(1)
				}
				if _, ok := q.Deadline(); ok {
					wrong.Add(1)
				}
			}
		})
	}
	readers.Wait()
	close(stop)
	observer.Wait()
	if wrong.Load() > 0 {
		t.Errorf("%d wrong reads with the references near their limit", wrong.Load())
	}
	if s := r.state.Load(); s != short {
		t.Errorf("after the reads the word is %#x, want %#x as before", s, short)
	}
	if saturated.Load() == 0 {
		t.Errorf("the observer never saw the references saturated: the test attacked nothing")
	}
	t.Logf("saturated word seen %d times", saturated.Load())
}
