package erpc_test

import (
	"context"
	"fmt"
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

// BenchmarkClientCall is a Client's blocking call over one and three
// memnet replicas with P2C, beside BenchmarkSessionCallMem's one session:
// the cost of placing a call (with one replica, all of it; with three,
// also two more server loops on the machine's cores).
func BenchmarkClientCall(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprint(n, "replicas"), func(b *testing.B) { benchClientCall(b, n) })
	}
}

func benchClientCall(b *testing.B, replicas int) {
	net := newMemNet()
	var addrs []string
	for range replicas {
		addrs = append(addrs, benchListen(b, net, rawEcho(b)).Addr().String())
	}
	name := newFleetName()
	testResolver.set(name, addrs...)
	ep := benchListen(b, net, nil)
	c, err := ep.NewClient("fleettest:///" + name)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	req, resp := make([]byte, 32), make([]byte, 0, 32)
	resp, _ = c.Call(ctx, "EchoInPlace", req, resp)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if resp, err = c.Call(ctx, "EchoInPlace", req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionCallMem is BenchmarkClientCall's baseline: one Session
// to one of the same servers.
func BenchmarkSessionCallMem(b *testing.B) {
	net := newMemNet()
	srv := benchListen(b, net, rawEcho(b))
	s, err := benchListen(b, net, nil).Dial(context.Background(), srv.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req, resp := make([]byte, 32), make([]byte, 0, 32)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if resp, err = s.Call(ctx, "EchoInPlace", req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// benchListen is memNet.Listen for a benchmark.
func benchListen(b *testing.B, n *memNet, srv *erpc.Server) *erpc.Endpoint {
	tr, err := n.net.Listen("")
	if err != nil {
		b.Fatal(err)
	}
	var ep *erpc.Endpoint
	if srv == nil {
		ep, err = erpc.Listen("", erpc.WithTransport(tr))
	} else {
		ep, err = srv.Listen("", erpc.WithTransport(tr))
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ep.Close() })
	return ep
}
