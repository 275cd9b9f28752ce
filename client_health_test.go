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

// TestClientEjectsAndReturns: a replica whose calls fail is ejected after
// a few failures in a row, takes no calls while ejected, and comes back
// once its ejection ends and serves again.
func TestClientEjectsAndReturns(t *testing.T) {
	defer erpc.SetEjectTiming(3, 300*time.Millisecond)()
	defer erpc.SimulateServerFaults("fault:")() // a broken server, not its handler's answer
	net := newMemNet()
	var broken atomic.Bool
	broken.Store(true)
	var badRuns atomic.Int64
	bad := erpc.NewServer()
	if err := bad.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) {
		badRuns.Add(1)
		if broken.Load() {
			return nil, erpc.Errorf(erpc.Unavailable, "fault: broken")
		}
		return req, nil
	}); err != nil {
		t.Fatal(err)
	}
	badEP := net.Listen(t, bad)
	good := startReplicas(t, net, 2, 0)
	name := newFleetName()
	testResolver.set(name, append(addrsOf(good), badEP.Addr().String())...)
	// Round robin: P2C's latency penalty for failures could keep the
	// failing replica from its third failure in a row, so it would never
	// be ejected (seen flaky: 0 to 2 failures in 60 calls).
	c := newFleetClient(t, net, name, erpc.WithBalancer(balancer.RoundRobin()))
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	ctx := context.Background()
	failed := 0
	for range 60 {
		if _, err := c.Call(ctx, "Echo", []byte("x"), nil); err != nil {
			failed++
		}
	}
	if st := replicaState(c, badEP.Addr().String()); st != erpc.ReplicaEjected {
		t.Fatalf("failing replica is %v after 60 calls (%d failed), want ejected: %+v", st, failed, c.Replicas())
	}
	if failed < 3 || failed > 10 {
		t.Errorf("%d calls failed before the ejection, want 3 to 10", failed)
	}
	runs := badRuns.Load()
	for range 30 {
		if _, err := c.Call(ctx, "Echo", []byte("x"), nil); err != nil {
			t.Fatalf("call with the failing replica ejected: %v", err)
		}
	}
	if n := badRuns.Load() - runs; n != 0 && replicaState(c, badEP.Addr().String()) == erpc.ReplicaEjected {
		t.Errorf("ejected replica ran %d calls", n)
	}
	broken.Store(false)
	// Calls probe it once its ejection has passed; a success brings it
	// back.
	deadline := time.Now().Add(5 * time.Second)
	for replicaState(c, badEP.Addr().String()) != erpc.ReplicaReady {
		if time.Now().After(deadline) {
			t.Fatalf("replica not back 5 s after it recovered: %+v", c.Replicas())
		}
		if _, err := c.Call(ctx, "Echo", []byte("x"), nil); err != nil {
			t.Fatalf("call while the replica is ejected: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	runs = badRuns.Load()
	for range 60 {
		if _, err := c.Call(ctx, "Echo", []byte("x"), nil); err != nil {
			t.Fatalf("call after the return: %v", err)
		}
	}
	if badRuns.Load() == runs {
		t.Errorf("returned replica served none of 60 calls")
	}
}

// TestClientKillOnlyInFlightFail: one replica's endpoint is closed
// abruptly under load. Calls fail only if they were in flight to it (at
// most one per caller), never-ran ones go elsewhere, no request runs
// twice, and the fleet serves on.
func TestClientKillOnlyInFlightFail(t *testing.T) {
	net := newMemNet()
	var mu sync.Mutex
	runs := map[uint64]int{}
	srvFor := func() *erpc.Server {
		s := erpc.NewServer()
		if err := s.Handle("Once", func(_ context.Context, req []byte) ([]byte, error) {
			mu.Lock()
			runs[uint64FromBytes(req)]++
			mu.Unlock()
			time.Sleep(100 * time.Microsecond)
			return req, nil
		}, erpc.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	var eps []*erpc.Endpoint
	var addrs []string
	for range 3 {
		ep := net.Listen(t, srvFor())
		eps = append(eps, ep)
		addrs = append(addrs, ep.Addr().String())
	}
	name := newFleetName()
	testResolver.set(name, addrs...)
	c := newFleetClient(t, net, name)
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	const workers = 6
	var next atomic.Uint64
	var calls, failed, afterKill atomic.Int64
	var killed atomic.Bool
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
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				wasKilled := killed.Load()
				_, err := c.Call(ctx, "Once", uint64Bytes(next.Add(1)), nil)
				cancel()
				calls.Add(1)
				if err != nil {
					failed.Add(1)
					if wasKilled {
						afterKill.Add(1)
						t.Logf("call started after the kill failed: %v", err)
					}
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	killed.Store(true)
	eps[0].Close()
	time.Sleep(700 * time.Millisecond) // past the client's failure timeout
	close(stop)
	wg.Wait()
	if n := failed.Load(); n > workers {
		t.Errorf("%d calls failed, want at most the %d in flight at the kill", n, workers)
	}
	if n := afterKill.Load(); n > workers {
		t.Errorf("%d calls started after the kill failed", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range runs {
		if n > 1 {
			t.Fatalf("request %d ran %d times", id, n)
		}
	}
	if calls.Load() < 100 {
		t.Errorf("only %d calls made", calls.Load())
	}
	t.Logf("%d calls, %d failed", calls.Load(), failed.Load())
}

func uint64Bytes(n uint64) []byte {
	b := make([]byte, 8)
	for i := range 8 {
		b[i] = byte(n >> (8 * i))
	}
	return b
}

func uint64FromBytes(b []byte) uint64 {
	var n uint64
	for i := 0; i < 8 && i < len(b); i++ {
		n |= uint64(b[i]) << (8 * i)
	}
	return n
}
