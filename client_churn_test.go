package erpc_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestClientChurnRandomized: a non-idempotent method under concurrent
// load while a seeded random sequence of events changes the fleet:
// replicas drained (Shutdown), killed (Close), added, removed from the
// resolver. No request runs twice; calls fail only at kills (at most one
// per caller and kill: those in flight there); the fleet serves on.
func TestClientChurnRandomized(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	net := newMemNet()
	var mu sync.Mutex
	ran := map[uint64]int{}
	listen := func() *erpc.Endpoint {
		s := erpc.NewServer()
		if err := s.Handle("Once", func(_ context.Context, req []byte) ([]byte, error) {
			mu.Lock()
			ran[uint64FromBytes(req)]++
			mu.Unlock()
			return req, nil
		}); err != nil {
			t.Fatal(err)
		}
		return net.Listen(t, s)
	}
	live := []*erpc.Endpoint{listen(), listen(), listen()}
	name := newFleetName()
	publish := func() {
		var a []string
		for _, ep := range live {
			a = append(a, ep.Addr().String())
		}
		testResolver.set(name, a...)
	}
	publish()
	c := newFleetClient(t, net, name)
	waitReplicas(t, c, erpc.ReplicaReady, 3)

	const workers = 6
	var id atomic.Uint64
	var failed, calls atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if _, err := c.Call(ctx, "Once", uint64Bytes(id.Add(1)), nil); err != nil {
					failed.Add(1)
					t.Logf("call failed: %v", err)
				}
				cancel()
				calls.Add(1)
			}
		}()
	}
	kills, drains, drops, adds := 0, 0, 0, 0
	for range 12 {
		time.Sleep(time.Duration(10+rng.IntN(30)) * time.Millisecond)
		i := rng.IntN(len(live))
		switch ev := rng.IntN(4); {
		case ev == 0 && len(live) > 2: // drain
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			if err := live[i].Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			cancel()
			drains++
			live = append(live[:i], live[i+1:]...)
		case ev == 1 && len(live) > 2: // kill
			live[i].Close()
			kills++
			live = append(live[:i], live[i+1:]...)
		case ev == 2 && len(live) > 2: // the resolver drops one
			defer live[i].Close()
			drops++
			live = append(live[:i], live[i+1:]...)
		default: // scale out
			adds++
			live = append(live, listen())
		}
		publish()
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for k, n := range ran {
		if n > 1 {
			t.Fatalf("request %d ran %d times", k, n)
		}
	}
	if limit := int64(workers * kills); failed.Load() > limit {
		t.Errorf("%d calls failed with %d kills, want at most %d", failed.Load(), kills, limit)
	}
	if calls.Load() < 100 {
		t.Errorf("only %d calls made", calls.Load())
	}
	t.Logf("%d calls, %d failed; %d drains, %d kills, %d dropped, %d added", calls.Load(), failed.Load(), drains, kills, drops, adds)
}
