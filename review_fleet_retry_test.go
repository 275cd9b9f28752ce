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

// TestReviewHedgesOutsideRetryBudget: every replica answers after 5 ms;
// an Idempotent method hedges after 1 ms. The retry budget (a tenth of
// the calls; its floor set to none here) is what bounds extra load
// ("at most 10 % extra load", issue 31; MethodPolicy: repeats "under the
// client's retry budget"), but each hedge sends a second copy that runs:
// the fleet serves about twice the calls.
func TestReviewHedgesOutsideRetryBudget(t *testing.T) {
	defer erpc.SetRetryBudget(0.1, -1)()
	net := newMemNet()
	reps := revMemFleet(t, net, 2)
	name := newFleetName()
	testResolver.set(name, revAddrs(reps)...)
	c := newFleetClient(t, net, name, erpc.WithMethodPolicy("Slow",
		erpc.MethodPolicy{Idempotent: true, Hedge: time.Millisecond, MaxAttempts: 2}))
	waitReplicas(t, c, erpc.ReplicaReady, 2)

	const workers, each = 16, 25
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := c.Call(context.Background(), "Slow", []byte("x"), nil); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	calls := int64(workers * each)
	runs := reps[0].runs.Load() + reps[1].runs.Load()
	if failed.Load() != 0 {
		t.Fatalf("%d calls failed", failed.Load())
	}
	if runs <= calls {
		t.Fatalf("no hedge ran (%d runs for %d calls): the fault was not injected", runs, calls)
	}
	if limit := calls + calls/10 + 5; runs > limit {
		t.Fatalf("%d calls ran %d times on the fleet (%d extra copies, %.0f%% extra load); the retry budget allows %d",
			calls, runs, runs-calls, 100*float64(runs-calls)/float64(calls), limit-calls)
	}
}

// TestReviewFailoverNeverSameReplicaTwice: ten ready replicas none of
// which has the method (each refuses it, NotExecuted). With
// MaxAttempts 10 a call should visit each replica once: the Client
// promises never the same replica twice while another is ready.
func TestReviewFailoverNeverSameReplicaTwice(t *testing.T) {
	net := newMemNet()
	const n = 10
	reps := revMemFleet(t, net, n)
	name := newFleetName()
	testResolver.set(name, revAddrs(reps)...)
	c := newFleetClient(t, net, name, erpc.WithMethodPolicy("Nope", erpc.MethodPolicy{MaxAttempts: n}))
	waitReplicas(t, c, erpc.ReplicaReady, n)

	bad := 0
	var example []int64
	for call := range 20 {
		before := make([]int64, n)
		for i, r := range reps {
			before[i] = r.arrived.Load()
		}
		_, err := c.Call(context.Background(), "Nope", []byte("x"), nil)
		if !erpc.NotExecuted(err) || erpc.CodeOf(err) != erpc.Unimplemented {
			t.Fatalf("call %d: %v, want Unimplemented, never ran", call, err)
		}
		got := make([]int64, n)
		total := int64(0)
		dup := false
		for i, r := range reps {
			got[i] = r.arrived.Load() - before[i]
			total += got[i]
			if got[i] != 1 {
				dup = true
			}
		}
		if total != n {
			t.Fatalf("call %d: %d attempts, want %d (MaxAttempts): %v", call, total, n, got)
		}
		if dup {
			bad++
			if example == nil {
				example = got
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of 20 calls went to one replica twice while another was ready and untried; attempts per replica, e.g.: %v", bad, example)
	}
}

// TestReviewRemovedAddressGetsNoNewCalls: once the resolver's update
// without a replica has been delivered (Watcher.Update returned), that
// replica "takes no new" calls (ReplicaDraining doc). Calls made right
// after the update still reach it.
func TestReviewRemovedAddressGetsNoNewCalls(t *testing.T) {
	net := newMemNet()
	reps := revMemFleet(t, net, 2)
	a, b := reps[0], reps[1]
	name := newFleetName()
	c := newFleetClient(t, net, name)
	rnd := rand.New(rand.NewPCG(31, 10))
	violations, reached := 0, int64(0)
	const rounds = 20
	for range rounds {
		testResolver.set(name, a.addr, b.addr)
		if !revWait(3*time.Second, func() bool { return revCountState(c, erpc.ReplicaReady) == 2 }) {
			t.Fatalf("replicas not ready: %+v", c.Replicas())
		}
		before := a.arrived.Load()
		testResolver.set(name, b.addr) // a removed: Update has returned
		for range 2 + rnd.IntN(4) {
			if _, err := c.Call(context.Background(), "Echo", []byte("x"), nil); err != nil {
				t.Fatalf("call: %v", err)
			}
		}
		if d := a.arrived.Load() - before; d > 0 {
			violations++
			reached += d
		}
	}
	if violations > 0 {
		t.Fatalf("in %d of %d rounds, %d new calls made after the resolver removed a replica reached it", violations, rounds, reached)
	}
}

// TestReviewNoCallAfterDrainNotice: a server shuts down under load; the
// Client "sends it no new call once it heard the notice". A client
// interceptor sees each attempt's session before it is sent: an attempt
// on a session whose Draining() is already true is a new call sent after
// the notice was heard. At most one per caller can race the notice's
// arrival; more are calls placed on a replica known to be draining.
func TestReviewNoCallAfterDrainNotice(t *testing.T) {
	net := newMemNet()
	reps := revMemFleet(t, net, 3)
	name := newFleetName()
	testResolver.set(name, revAddrs(reps)...)
	var afterNotice atomic.Int64
	icpt := func(ctx context.Context, method string, req, resp any, s *erpc.Session, invoke erpc.UnaryInvoker) error {
		if s.Draining() {
			afterNotice.Add(1)
		}
		return invoke(ctx, method, req, resp)
	}
	ep := net.Listen(t, nil, erpc.WithFailureTimeout(300*time.Millisecond), erpc.WithUnaryClientInterceptors(icpt))
	c, err := ep.NewClient("fleettest:///" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitReplicas(t, c, erpc.ReplicaReady, 3)

	const workers = 8
	var failed atomic.Int64
	var firstErr atomic.Value
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
				if _, err := c.Call(context.Background(), "Echo", []byte("x"), nil); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	victim := reps[0]
	hs, err := net.Listen(t, nil).Dial(context.Background(), victim.addr)
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() { _, err := hs.Call(context.Background(), "Hold", nil, nil); held <- err }()
	if !revWait(2*time.Second, func() bool { return victim.holding.Load() == 1 }) {
		t.Fatal("hold call not running")
	}
	time.Sleep(50 * time.Millisecond)
	shut := make(chan error, 1)
	go func() { shut <- victim.ep.Shutdown(context.Background()) }()
	if !revWait(2*time.Second, func() bool { return replicaState(c, victim.addr) == erpc.ReplicaDraining }) {
		t.Fatalf("victim never draining: %+v", c.Replicas())
	}
	time.Sleep(300 * time.Millisecond)
	close(victim.release)
	<-held
	close(stop)
	wg.Wait()
	if err := <-shut; err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("shutdown: %v", err)
	}
	if failed.Load() != 0 {
		t.Fatalf("%d calls failed during a drain: %v", failed.Load(), firstErr.Load())
	}
	t.Logf("attempts on a session already draining: %d", afterNotice.Load())
	if n := afterNotice.Load(); n > workers {
		t.Fatalf("%d attempts were placed on the draining replica's session after it had heard the notice (at most %d can race it)", n, workers)
	}
}
