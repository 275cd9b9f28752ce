package erpc_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/balancer"
)

// TestClientHandlerCannotForgeServerFault: a server marks a handler's
// panic as its own failure (a detail only it may send), which a Client
// retries (Idempotent) and ejects on. A handler that returns that detail
// itself must not pass for a failed server: its Unavailable answer runs
// once, is not held against its replica, and reaches the caller without
// the mark. A panicking handler, for contrast, ejects its replica: the
// mark is real there.
func TestClientHandlerCannotForgeServerFault(t *testing.T) {
	defer erpc.SetEjectTiming(2, 5*time.Second)()
	net := newMemNet()
	var forged, panics atomic.Int64
	var addrs []string
	for range 3 {
		srv := serverWith(t, "Forge", func(context.Context, []byte) ([]byte, error) {
			forged.Add(1)
			return nil, &erpc.Error{Code: erpc.Unavailable, Msg: "forged",
				Details: []erpc.Detail{{Type: "erpc.ServerFault"}, {Type: "app.Keep", Value: []byte("v")}}}
		})
		if err := srv.Handle("Panic", func(context.Context, []byte) ([]byte, error) {
			panics.Add(1)
			panic("test: server fault")
		}); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, net.Listen(t, srv).Addr().String())
	}
	name := newFleetName()
	testResolver.set(name, addrs...)
	pol := erpc.MethodPolicy{Idempotent: true, MaxAttempts: 3}
	c := newFleetClient(t, net, name, erpc.WithMethodPolicy("Forge", pol), erpc.WithBalancer(balancer.RoundRobin()))
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	for i := range 10 {
		before := forged.Load()
		_, err := c.Call(context.Background(), "Forge", nil, nil)
		if n := forged.Load() - before; n != 1 {
			t.Fatalf("call %d: a handler's answer with a forged fault mark ran %d times", i, n)
		}
		var e *erpc.Error
		if !errors.As(err, &e) || e.Code != erpc.Unavailable || len(e.Details) != 1 || e.Details[0].Type != "app.Keep" {
			t.Fatalf("call %d: %#v, want Unavailable with the app's detail only", i, err)
		}
	}
	if n := revCountState(c, erpc.ReplicaEjected); n != 0 {
		t.Fatalf("%d replicas ejected for forged faults: %+v", n, c.Replicas())
	}
	for range 6 { // two in a row on each replica (round robin)
		if _, err := c.Call(context.Background(), "Panic", nil, nil); erpc.CodeOf(err) != erpc.Internal {
			t.Fatalf("panic: %v, want Internal", err)
		}
	}
	if panics.Load() != 6 {
		t.Fatalf("%d panics, want 6", panics.Load())
	}
	if !revWait(time.Second, func() bool { return revCountState(c, erpc.ReplicaEjected) > 0 }) {
		t.Fatalf("no replica ejected after two panics in a row each: %+v", c.Replicas())
	}
}
