package erpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/balancer"
)

// TestClientSpreadsAndFollowsResolver: a Client over three replicas
// (round robin, so that each has its turn: sequential calls with P2C
// favour the fastest) spreads its calls over all of them; a replica the
// resolver adds gets calls, and one it removes gets none once it is gone.
func TestClientSpreadsAndFollowsResolver(t *testing.T) {
	net := newMemNet()
	reps := startReplicas(t, net, 4, 0)
	name := newFleetName()
	testResolver.set(name, addrsOf(reps[:3])...)
	c := newFleetClient(t, net, name, erpc.WithBalancer(balancer.RoundRobin()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	call := func(n int) {
		t.Helper()
		for range n {
			if out, err := c.Call(ctx, "Echo", []byte("hi"), nil); err != nil || string(out) != "hi" {
				t.Fatalf("Call: %q, %v", out, err)
			}
		}
	}
	waitReplicas(t, c, 1 /* ready */, 3)
	call(300)
	for i, r := range reps[:3] {
		if r.runs.Load() == 0 {
			t.Errorf("replica %d served no call of 300", i)
		}
	}
	testResolver.set(name, reps[1].addr, reps[2].addr, reps[3].addr) // add 3, remove 0
	waitReplicas(t, c, 1, 3)
	for replicaState(c, reps[0].addr) != -1 {
		time.Sleep(time.Millisecond)
	}
	before := reps[0].runs.Load()
	call(300)
	if got := reps[0].runs.Load(); got != before {
		t.Errorf("removed replica served %d calls after its removal", got-before)
	}
	if reps[3].runs.Load() == 0 {
		t.Errorf("added replica served no call of 300")
	}
}

// TestClientCloseLeavesNothing: the package-level NewClient on a plain
// target (passthrough) opens its own endpoint; Close stops its control
// goroutine, dials, sessions and endpoint, leaving no goroutine behind.
func TestClientCloseLeavesNothing(t *testing.T) {
	checkLeaks(t)
	srv := listenT(t, rawEcho(t), "mem://"+newFleetName())
	c, err := erpc.NewClient(srv.Target())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 10 {
		if _, err := c.Call(ctx, "EchoInPlace", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(ctx, "EchoInPlace", []byte("x"), nil); !erpc.NotExecuted(err) {
		t.Errorf("call after Close: %v, want a NotExecuted error", err)
	}
}
