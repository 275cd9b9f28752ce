package erpc_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/balancer"
)

// failingFleet is n replicas whose "Flaky" fails with Unavailable (after
// running: the failure may have run) and counts its runs. The failure is
// a handler's answer, which a Client never retries, unless the test
// makes it a simulated server fault (SimulateServerFaults("fault:")).
func failingFleet(t *testing.T, n int) (*memNet, string, *atomic.Int64) {
	net := newMemNet()
	var runs atomic.Int64
	var addrs []string
	for range n {
		s := erpc.NewServer()
		if err := s.Handle("Flaky", func(context.Context, []byte) ([]byte, error) {
			runs.Add(1)
			return nil, erpc.Errorf(erpc.Unavailable, "fault: flaky")
		}); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, net.Listen(t, s).Addr().String())
	}
	name := newFleetName()
	testResolver.set(name, addrs...)
	return net, name, &runs
}

// TestClientRetryOnlyIdempotent: a failure that may have run is not
// repeated for a method not marked Idempotent: it ran once.
func TestClientRetryOnlyIdempotent(t *testing.T) {
	net, name, runs := failingFleet(t, 3)
	c := newFleetClient(t, net, name)
	for i := range 20 {
		if _, err := c.Call(context.Background(), "Flaky", nil, nil); erpc.CodeOf(err) != erpc.Unavailable {
			t.Fatalf("call %d: %v, want the handler's Unavailable", i, err)
		}
	}
	if n := runs.Load(); n != 20 {
		t.Errorf("20 calls of a non-idempotent method ran %d times", n)
	}
}

// TestClientRetryBudget: an Idempotent method that always fails is
// retried, but retries add at most a tenth of the calls (the budget's
// floor of retries a second turned off here, so the ratio alone bounds).
func TestClientRetryBudget(t *testing.T) {
	defer erpc.SetRetryBudget(0.1, -1)()
	defer erpc.SimulateServerFaults("fault:")()
	net, name, runs := failingFleet(t, 3)
	c := newFleetClient(t, net, name, erpc.WithMethodPolicy("Flaky", erpc.MethodPolicy{Idempotent: true, MaxAttempts: 5}))
	const calls = 300
	for range calls {
		if _, err := c.Call(context.Background(), "Flaky", nil, nil); err == nil {
			t.Fatal("a failing method succeeded")
		}
	}
	extra := runs.Load() - calls
	if extra <= 0 {
		t.Errorf("no retry of an Idempotent method")
	}
	if limit := int64(calls/10 + 1); extra > limit {
		t.Errorf("%d retries for %d calls, over the budget of %d", extra, calls, limit)
	}
	t.Logf("%d calls, %d retries", calls, extra)
}

// TestClientHedge: a hedged Idempotent call whose first replica is slow
// is answered by a second copy on another replica; the slow copy is
// canceled. A hedge on a method not marked Idempotent is refused.
func TestClientHedge(t *testing.T) {
	net := newMemNet()
	slowRelease := make(chan struct{})
	var slowRuns, fastRuns atomic.Int64
	slow, fast := erpc.NewServer(), erpc.NewServer()
	if err := slow.Handle("Get", func(ctx context.Context, req []byte) ([]byte, error) {
		slowRuns.Add(1)
		select {
		case <-slowRelease:
		case <-ctx.Done():
		}
		return []byte("slow"), nil
	}, erpc.Background()); err != nil {
		t.Fatal(err)
	}
	if err := fast.Handle("Get", func(context.Context, []byte) ([]byte, error) {
		fastRuns.Add(1)
		return []byte("fast"), nil
	}); err != nil {
		t.Fatal(err)
	}
	defer close(slowRelease)
	slowEP, fastEP := net.Listen(t, slow), net.Listen(t, fast)
	name := newFleetName()
	testResolver.set(name, slowEP.Addr().String(), fastEP.Addr().String())
	ep := net.Listen(t, nil)
	if _, err := ep.NewClient("fleettest:///"+name, erpc.WithMethodPolicy("Get", erpc.MethodPolicy{Hedge: time.Millisecond})); erpc.CodeOf(err) != erpc.InvalidArgument {
		t.Fatalf("hedge without Idempotent: %v, want InvalidArgument", err)
	}
	// Round robin: every other call goes to the slow replica first.
	c := newFleetClient(t, net, name, erpc.WithBalancer(balancer.RoundRobin()),
		erpc.WithMethodPolicy("Get", erpc.MethodPolicy{Idempotent: true, Hedge: 20 * time.Millisecond}))
	waitReplicas(t, c, erpc.ReplicaReady, 2)
	for i := range 20 {
		out, err := c.Call(context.Background(), "Get", nil, nil)
		if err != nil || string(out) != "fast" {
			t.Fatalf("call %d: %q, %v", i, out, err)
		}
	}
	// Each call ran on the fast replica once; on the slow one at most
	// once (when it was picked first), and was canceled there.
	if fastRuns.Load() != 20 || slowRuns.Load() > 20 {
		t.Errorf("20 hedged calls ran %d times fast, %d slow", fastRuns.Load(), slowRuns.Load())
	}
	if slowRuns.Load() < 5 {
		t.Errorf("%d calls went to the slow replica first, want about 10: the hedge was not exercised", slowRuns.Load())
	}
}

// TestClientNeverRunsTwice: a non-idempotent method over a fleet whose
// replicas drain and come back under concurrent load: whatever fails, no
// request runs twice, and none fails while another replica is ready.
func TestClientNeverRunsTwice(t *testing.T) {
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
	eps := []*erpc.Endpoint{listen(), listen(), listen()}
	name := newFleetName()
	set := func() {
		var a []string
		for _, ep := range eps {
			a = append(a, ep.Addr().String())
		}
		testResolver.set(name, a...)
	}
	set()
	c := newFleetClient(t, net, name)
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	var id atomic.Uint64
	var failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := id.Add(1)
				if _, err := c.Call(context.Background(), "Once", uint64Bytes(k), nil); err != nil {
					failed.Add(1)
					mu.Lock()
					n := ran[k]
					mu.Unlock()
					t.Logf("call %d failed (it ran %d times): %v", k, n, err)
				}
			}
		}()
	}
	for round := range 4 { // drain one replica after another, replacing it
		time.Sleep(30 * time.Millisecond)
		i := round % len(eps)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if err := eps[i].Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		cancel()
		eps[i] = listen()
		set()
	}
	time.Sleep(30 * time.Millisecond)
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for k, n := range ran {
		if n > 1 {
			t.Fatalf("request %d ran %d times", k, n)
		}
	}
	if failed.Load() != 0 {
		t.Errorf("%d calls failed over drains", failed.Load())
	}
	if len(ran) < 100 {
		t.Errorf("only %d requests ran", len(ran))
	}
}
