package erpc_test

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/balancer"
)

// TestReviewHedgeLoserCanceled: the first copy of each call blocks
// until its context ends; the hedge (on the other replica) answers at
// once. The first answer wins and the other copy is canceled: its
// handler's context ends.
func TestReviewHedgeLoserCanceled(t *testing.T) {
	net := newMemNet()
	var seen sync.Map // id -> *atomic.Int64 copies that arrived
	var canceled, timedOut atomic.Int64
	var addrs []string
	for range 2 {
		srv := serverWith(t, "Get", func(ctx context.Context, req []byte) ([]byte, error) {
			id := binary.LittleEndian.Uint64(req)
			v, _ := seen.LoadOrStore(id, new(atomic.Int64))
			if v.(*atomic.Int64).Add(1) == 1 { // the first copy
				select {
				case <-ctx.Done():
					canceled.Add(1)
				case <-time.After(3 * time.Second):
					timedOut.Add(1)
				}
				return []byte("slow"), nil
			}
			return []byte("fast"), nil
		}, erpc.Background())
		addrs = append(addrs, net.Listen(t, srv).Addr().String())
	}
	name := newFleetName()
	testResolver.set(name, addrs...)
	c := newFleetClient(t, net, name, erpc.WithMethodPolicy("Get", erpc.MethodPolicy{Idempotent: true, Hedge: 2 * time.Millisecond, MaxAttempts: 2}))
	waitReplicas(t, c, erpc.ReplicaReady, 2)
	const calls = 10
	req := make([]byte, 8)
	for i := range calls {
		binary.LittleEndian.PutUint64(req, uint64(i+1))
		out, err := c.Call(context.Background(), "Get", req, nil)
		if err != nil || string(out) != "fast" {
			t.Fatalf("call %d: %q, %v; want the hedge's answer", i, out, err)
		}
	}
	if !revWait(3*time.Second, func() bool { return canceled.Load()+timedOut.Load() == calls }) {
		t.Fatalf("losing copies: %d canceled, %d still running", canceled.Load(), calls-canceled.Load()-timedOut.Load())
	}
	if timedOut.Load() != 0 {
		t.Fatalf("%d of %d losing copies were never canceled", timedOut.Load(), calls)
	}
}

// TestReviewAddedReplicaGetsLoad: under load over two replicas, a third
// joins the resolver's set; once ready it takes a share of the calls at
// once (P2C: a new replica costs the others' average).
func TestReviewAddedReplicaGetsLoad(t *testing.T) {
	net := newMemNet()
	reps := revMemFleet(t, net, 3)
	name := newFleetName()
	testResolver.set(name, reps[0].addr, reps[1].addr)
	c := newFleetClient(t, net, name)
	waitReplicas(t, c, erpc.ReplicaReady, 2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c.Call(context.Background(), "Slow", nil, nil)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	testResolver.set(name, revAddrs(reps)...)
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	var before [3]int64
	for i, r := range reps {
		before[i] = r.runs.Load()
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	var d [3]int64
	var total int64
	for i, r := range reps {
		d[i] = r.runs.Load() - before[i]
		total += d[i]
	}
	t.Logf("after the add: %v", d)
	if total == 0 {
		t.Fatal("no load")
	}
	if float64(d[2]) < 0.15*float64(total) {
		t.Fatalf("the added replica served %d of %d calls after it was ready (%v)", d[2], total, d)
	}
}

// TestReviewDrainedGoneReplicaState: a server shuts down and is gone
// while the resolver still lists it; the Client keeps redialing it. Its
// state should then say it is being dialed (ReplicaConnecting: "its last
// one failed and a new one is being dialed"), not that its server is
// shutting down with calls finishing (ReplicaDraining); and when a
// server comes back at that address it is ready again.
func TestReviewDrainedGoneReplicaState(t *testing.T) {
	srv, _ := revNewServer(t)
	addr := revFreeUDP(t)
	ep, err := srv.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := revNewServer(t)
	oep, err := other.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer oep.Close()
	var dials atomic.Int64
	c, err := erpc.NewClient("static:///"+addr+","+oep.Addr().String(), erpc.WithFailureTimeout(200*time.Millisecond),
		erpc.WithStatsHandler(revStats{dials: &dials}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !revWait(3*time.Second, func() bool { return revCountState(c, erpc.ReplicaReady) == 2 }) {
		t.Fatalf("not ready: %+v", c.Replicas())
	}
	if err := ep.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	d0 := dials.Load()
	// drainRedial (1 s), then failed dials with backoff
	if !revWait(5*time.Second, func() bool { return dials.Load() >= d0+2 }) {
		t.Fatalf("the client never redialed the gone server (%d dials)", dials.Load()-d0)
	}
	if st := replicaState(c, addr); st != erpc.ReplicaConnecting {
		t.Errorf("server gone, %d failed redials since: the replica reports %v, want connecting", dials.Load()-d0, st)
	}
	srv2, _ := revNewServer(t)
	ep2, err := srv2.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ep2.Close()
	if !revWait(8*time.Second, func() bool { return replicaState(c, addr) == erpc.ReplicaReady }) {
		t.Fatalf("restarted server not ready again: %+v", c.Replicas())
	}
}

// TestReviewGoFailsOver: Client.Go on a method no replica has: it tries
// MaxAttempts distinct replicas, then runs done once with a never-ran
// error.
func TestReviewGoFailsOver(t *testing.T) {
	net := newMemNet()
	reps := revMemFleet(t, net, 3)
	name := newFleetName()
	testResolver.set(name, revAddrs(reps)...)
	c := newFleetClient(t, net, name)
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	for range 10 {
		var before [3]int64
		for i, r := range reps {
			before[i] = r.arrived.Load()
		}
		var n atomic.Int64
		done := make(chan error, 2)
		c.Go("Nope", nil, nil, func(_ []byte, err error) { n.Add(1); done <- err })
		err := <-done
		time.Sleep(5 * time.Millisecond)
		if n.Load() != 1 || !erpc.NotExecuted(err) {
			t.Fatalf("done ran %d times, err %v", n.Load(), err)
		}
		for i, r := range reps {
			if d := r.arrived.Load() - before[i]; d != 1 {
				t.Fatalf("replica %d got %d attempts, want 1 each", i, d)
			}
		}
	}
}

// TestReviewStreamReplicaDrains: a stream's replica shuts down mid-stream
// (documented: Shutdown ends its streams with Unavailable); the next
// NewStream goes to the other replica, and unary calls fail none.
func TestReviewStreamReplicaDrains(t *testing.T) {
	net := newMemNet()
	reps := revMemFleet(t, net, 2)
	name := newFleetName()
	testResolver.set(name, revAddrs(reps)...)
	c := newFleetClient(t, net, name)
	waitReplicas(t, c, erpc.ReplicaReady, 2)
	st, on := revChatFor(t, c, reps)
	go on.ep.Shutdown(context.Background())
	err := revExchange(st, 5, 100*time.Millisecond)
	if err == nil {
		t.Fatal("the stream outlived its server's Shutdown")
	}
	if erpc.CodeOf(err) != erpc.Unavailable {
		t.Fatalf("stream ended with %v, want Unavailable", err)
	}
	for range 5 {
		st2, err := c.NewStream(context.Background(), "Chat")
		if err != nil {
			t.Fatalf("new stream while a replica drains: %v", err)
		}
		if err := revExchange(st2, 2, 0); err != nil {
			t.Fatalf("new stream while a replica drains: %v", err)
		}
		st2.CloseSend()
		if _, err := c.Call(context.Background(), "Echo", nil, nil); err != nil {
			t.Fatalf("call while a replica drains: %v", err)
		}
	}
}

// TestReviewClientCallAllocsHashAndPolicy: Client.Call allocates nothing
// in steady state with a hashing balancer and an affinity key in the
// context, and for a method with an Idempotent policy.
func TestReviewClientCallAllocsHashAndPolicy(t *testing.T) {
	net := newMemNet()
	var addrs []string
	for range 3 {
		addrs = append(addrs, net.Listen(t, rawEcho(t)).Addr().String())
	}
	name := newFleetName()
	testResolver.set(name, addrs...)
	c := newFleetClient(t, net, name, erpc.WithBalancer(balancer.Hash()),
		erpc.WithMethodPolicy("EchoInPlace", erpc.MethodPolicy{Idempotent: true, MaxAttempts: 2}))
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	ctx := erpc.ContextWithHashKey(context.Background(), "user-42")
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
	if allocs > 0.05 {
		t.Fatalf("%.3f allocations per Client call (Hash, keyed, Idempotent), want 0", allocs)
	}
}
