package erpc_test

import (
	"context"
	"testing"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/balancer"
)

// TestClientCallAllocs: a Client's call over three replicas with P2C, in
// steady state, allocates nothing (client, servers and transport
// together), as a Session's does: placing it (pick, counters, outlier,
// retry budget) adds no allocation.
func TestClientCallAllocs(t *testing.T) {
	net := newMemNet()
	var addrs []string
	for range 3 {
		addrs = append(addrs, net.Listen(t, rawEcho(t)).Addr().String())
	}
	name := newFleetName()
	testResolver.set(name, addrs...)
	c := newFleetClient(t, net, name, erpc.WithBalancer(balancer.P2C()))
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	ctx := context.Background()
	req, resp := make([]byte, 32), make([]byte, 0, 32)
	for range 300 {
		resp, _ = c.Call(ctx, "EchoInPlace", req, resp)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		var err error
		if resp, err = c.Call(ctx, "EchoInPlace", req, resp); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.3f allocations per Client call", allocs)
	if allocs > 0.05 {
		t.Fatalf("%.3f allocations per Client call, want 0", allocs)
	}
}
