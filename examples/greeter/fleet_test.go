package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/balancer"
	"github.com/erpc-go/erpc/examples/greeter/greeterpb"
)

// TestGeneratedClientOverFleet: the generated client takes an
// erpc.Client as it takes a Session: its calls spread over two greeters
// behind one static target.
func TestGeneratedClientOverFleet(t *testing.T) {
	var impls []*Greeter
	var addrs []string
	for range 2 {
		impl := NewGreeter()
		s, err := start(impl, "127.0.0.1:0", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s.stop(ctx)
		})
		impls = append(impls, impl)
		addrs = append(addrs, strings.TrimPrefix(s.erpc.Target(), "udp://"))
	}
	// Round robin: this test is about the generated client over a fleet,
	// so every replica must see calls whatever their latencies. (P2C, the
	// default, shares sequential calls between equal replicas too since
	// its idle discount; balancer's TestP2CEqualReplicasShareSequential
	// holds it to that.)
	c, err := erpc.NewClient("static:///"+strings.Join(addrs, ","), erpc.WithBalancer(balancer.RoundRobin()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g := greeterpb.NewGreeterERPCClient(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Calls go to the replicas that are ready: until the second one's dial
	// is through, all of them may go to the first (1 run in about 15 did).
	// What is tested is the spread over two, so both are ready first.
	for ready := 0; ready < 2; time.Sleep(time.Millisecond) {
		ready = 0
		for _, r := range c.Replicas() {
			if r.State == erpc.ReplicaReady {
				ready++
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("replicas %v: not both ready", c.Replicas())
		}
	}
	for i := range 40 {
		if _, err := g.SayHello(ctx, &greeterpb.HelloRequest{Name: fmt.Sprint("n", i)}); err != nil {
			t.Fatalf("SayHello %d: %v", i, err)
		}
	}
	for i, impl := range impls {
		impl.mu.Lock()
		n := len(impl.seen)
		impl.mu.Unlock()
		if n == 0 {
			t.Errorf("greeter %d greeted nobody of 40", i)
		}
	}
}
