package erpc_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestClientDrainNoFailures: under steady concurrent load over three
// replicas, one shuts down (Endpoint.Shutdown). No call fails, the client
// marks the replica draining, and from then on no new request reaches
// it beyond the few each caller had already placed.
func TestClientDrainNoFailures(t *testing.T) {
	net := newMemNet()
	reps := startReplicas(t, net, 3, 200*time.Microsecond)
	name := newFleetName()
	testResolver.set(name, addrsOf(reps)...)
	c := newFleetClient(t, net, name)
	waitReplicas(t, c, erpc.ReplicaReady, 3)

	const workers = 8
	var calls, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Call(ctx, "Echo", []byte("x"), nil); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				calls.Add(1)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	victim := reps[0]
	deadlineHold := time.Now().Add(5 * time.Second)
	// A call held on the victim keeps its Shutdown waiting, so that the
	// drain is seen while the victim still serves.
	held := make(chan error, 1)
	go func() {
		s, err := net.Listen(t, nil).Dial(context.Background(), victim.addr)
		if err == nil {
			_, err = s.Call(context.Background(), "Hold", nil, nil)
		}
		held <- err
	}()
	for victim.holding.Load() == 0 {
		if time.Now().After(deadlineHold) {
			t.Fatal("the held call did not start in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- victim.ep.Shutdown(ctx)
	}()
	// The client sees the drain within a round trip or so.
	deadline := time.Now().Add(2 * time.Second)
	for replicaState(c, victim.addr) != erpc.ReplicaDraining {
		if time.Now().After(deadline) {
			close(victim.release)
			t.Fatalf("replica not draining after 2s: %+v", c.Replicas())
		}
		time.Sleep(100 * time.Microsecond)
	}
	seen := victim.arrived.Load()
	time.Sleep(100 * time.Millisecond)
	late := victim.arrived.Load() - seen
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned with a call held: %v", err)
	default:
	}
	close(victim.release)
	if err := <-held; err != nil {
		t.Errorf("held call: %v", err)
	}
	close(stop)
	wg.Wait()
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d calls failed during the drain; first: %v", n, calls.Load(), firstErr.Load())
	}
	// Each caller may have placed one call on it before the client saw
	// the drain.
	if late > workers {
		t.Errorf("%d requests reached the draining server after the client saw the drain (want <= %d)", late, workers)
	}
	if calls.Load() < 100 {
		t.Errorf("only %d calls made: no load", calls.Load())
	}
	t.Logf("%d calls, %d requests reached the drained server after the client saw it", calls.Load(), late)
}
