package erpc_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// blocker is a background handler for dispatch tests: "long" holds its
// worker until released; any other request records whether a long one was
// running when it started.
type blocker struct {
	started     chan struct{}
	release     chan struct{}
	longRunning atomic.Bool
	overlapped  atomic.Int32 // short requests that ran beside a long one
	once        sync.Once
}

// free lets the long requests finish (once; tests defer it so that a
// failure does not leave a worker blocked).
func (b *blocker) free() { b.once.Do(func() { close(b.release) }) }

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blocker) handle(_ context.Context, req []byte) ([]byte, error) {
	if string(req) == "long" {
		b.longRunning.Store(true)
		b.started <- struct{}{}
		<-b.release
		b.longRunning.Store(false)
		return req, nil
	}
	if b.longRunning.Load() {
		b.overlapped.Add(1)
	}
	return req, nil
}

// waitHeld waits until the server holds n requests: they have arrived and
// wait for or run in a worker.
func waitHeld(t *testing.T, ep *erpc.Endpoint, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ep.Stats().HeldRequests < n; {
		if time.Now().After(deadline) {
			t.Fatalf("server holds %d requests, want %d", ep.Stats().HeldRequests, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// dispatchRun sends, on one session, a long request and then a short one
// while the long one holds its worker, with two workers, and reports
// whether the short one ran beside the long one.
func dispatchRun(t *testing.T, d erpc.Dispatch) bool {
	n := newMemNet()
	b := newBlocker()
	srv := n.Listen(t, serverWith(t, "Work", b.handle, erpc.Background()),
		erpc.WithWorkers(2), erpc.WithDispatch(d))
	s := dialT(t, n, n.Listen(t, nil), srv)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer b.free()
	wg.Go(func() {
		if _, err := call(t, s, "Work", []byte("long")); err != nil {
			t.Error(err)
		}
	})
	<-b.started
	short := make(chan error, 1)
	go func() { _, err := call(t, s, "Work", []byte("short")); short <- err }()
	if d == erpc.DispatchShared { // it must run while the long one holds its worker
		if err := <-short; err != nil {
			t.Fatal(err)
		}
		b.free()
		return b.overlapped.Load() == 1
	}
	waitHeld(t, srv, 2) // it has arrived; give it time to run if it could
	select {
	case err := <-short:
		t.Logf("the short request completed while the long one ran: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	b.free()
	if err := <-short; err != nil {
		t.Fatal(err)
	}
	return b.overlapped.Load() == 1
}

// TestDispatchShared: with one shared queue an idle worker takes a request
// even when another request of its session holds the other worker.
func TestDispatchShared(t *testing.T) {
	checkLeaks(t)
	if !dispatchRun(t, erpc.DispatchShared) {
		t.Fatal("the short request waited behind the long one while a worker was idle")
	}
}

// TestDispatchHash: with a queue per worker, a session's requests wait
// behind each other even when another worker idles (the behaviour shared
// dispatch exists to avoid; if this fails, the hash policy is not what the
// benchmarks compare against).
func TestDispatchHash(t *testing.T) {
	checkLeaks(t)
	if dispatchRun(t, erpc.DispatchHash) {
		t.Fatal("the short request ran beside the long one: not queued per session")
	}
}

// TestSLOQueueRefusesAtOnce: with one worker, a 10 ms target and 1 ms
// service, nine requests may wait; the tenth is refused at once and counted,
// and every admitted one is served.
func TestSLOQueueRefusesAtOnce(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	b := newBlocker()
	srv := n.Listen(t, serverWith(t, "Work", b.handle, erpc.Background()),
		erpc.WithWorkers(1), erpc.WithSLO(10*time.Millisecond, time.Millisecond), erpc.WithWindow(16))
	s := dialT(t, n, n.Listen(t, nil, erpc.WithWindow(16)), srv)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer b.free()
	var failed atomic.Int32
	wg.Go(func() {
		if _, err := call(t, s, "Work", []byte("long")); err != nil {
			failed.Add(1)
		}
	})
	<-b.started
	for range 9 {
		wg.Go(func() {
			if _, err := call(t, s, "Work", []byte("short")); err != nil {
				t.Errorf("admitted request: %v", err)
				failed.Add(1)
			}
		})
	}
	waitHeld(t, srv, 10)
	start := time.Now()
	_, err := call(t, s, "Work", []byte("late"))
	if !errors.Is(err, erpc.ErrResourceExhausted) {
		t.Fatalf("request beyond the SLO's queue: %v, want ResourceExhausted", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusal took %v: it waited", d)
	}
	b.free()
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d admitted requests failed", failed.Load())
	}
	st := srv.Stats()
	if st.NacksSent != 1 {
		t.Fatalf("NacksSent = %d, want 1", st.NacksSent)
	}
	// The refusal shows in the rate once its second is complete.
	for deadline := time.Now().Add(3 * time.Second); srv.Stats().NacksLastSecond != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("NacksLastSecond = %d, want 1 in the second after the refusal", srv.Stats().NacksLastSecond)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSLONeverLocksOut: whatever the target and whatever the first
// requests cost, a request that finds a worker free is admitted. Each
// round draws a target, a given mean (often at or above the target) or
// none (measured), a pool, and a slow phase of one to three requests
// that take one to four targets; then it calls one request at a time, so
// that every request arrives with every worker free. On the old bound
// (0 once the mean reached the target) the server refused every request
// from then on, and since it admitted nothing, the mean never moved.
func TestSLONeverLocksOut(t *testing.T) {
	checkLeaks(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	const rounds, calls = 8, 12
	for round := range rounds {
		target := time.Duration(1+rng.IntN(8)) * time.Millisecond
		var mean time.Duration // 0: measured
		if rng.IntN(3) > 0 {
			mean = target/2 + time.Duration(rng.Int64N(int64(3*target))) // from half to 3.5 targets
		}
		workers := 1 + rng.IntN(3)
		dispatch := erpc.Dispatch(rng.IntN(2))
		slow := 1 + rng.IntN(3)
		var ran, slowRan atomic.Int32
		slowFor := make([]time.Duration, slow)
		for i := range slowFor {
			slowFor[i] = target + time.Duration(rng.Int64N(int64(3*target)))
		}
		n := newMemNet()
		srv := n.Listen(t, serverWith(t, "Work", func(_ context.Context, req []byte) ([]byte, error) {
			if i := int(ran.Add(1)) - 1; i < slow {
				slowRan.Add(1)
				time.Sleep(slowFor[i])
			}
			return req, nil
		}, erpc.Background()), erpc.WithWorkers(workers), erpc.WithDispatch(dispatch), erpc.WithSLO(target, mean))
		s := dialT(t, n, n.Listen(t, nil), srv)
		for i := range calls {
			if _, err := call(t, s, "Work", []byte("x")); err != nil {
				t.Fatalf("round %d (target %v, mean %v, %d workers, %v, slow %v): call %d with every worker free: %v",
					round, target, mean, workers, dispatch, slowFor, i, err)
			}
		}
		if got := slowRan.Load(); got != int32(slow) {
			t.Fatalf("round %d: %d slow requests ran, want %d", round, got, slow)
		}
		if st := srv.Stats(); st.NacksSent != 0 {
			t.Fatalf("round %d: %d requests refused with every worker free", round, st.NacksSent)
		}
		s.Close()
	}
}
