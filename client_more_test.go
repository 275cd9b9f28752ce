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

// TestClientGo: Client.Go places each call on a replica, runs done once
// per call with the answer, and spreads the calls.
func TestClientGo(t *testing.T) {
	net := newMemNet()
	reps := startReplicas(t, net, 3, 0)
	name := newFleetName()
	testResolver.set(name, addrsOf(reps)...)
	c := newFleetClient(t, net, name, erpc.WithBalancer(balancer.RoundRobin()))
	// All three up first: 300 Go calls are placed in a blink, before a
	// slow machine has dialed the others (flaky on main without it).
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	const n = 300
	var wg sync.WaitGroup
	var bad atomic.Int64
	wg.Add(n)
	for i := range n {
		want := string(rune('a' + i%26))
		c.Go("Echo", []byte(want), nil, func(resp []byte, err error) {
			if err != nil || string(resp) != want {
				bad.Add(1)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Errorf("%d of %d Go calls failed or got another's answer", bad.Load(), n)
	}
	for i, r := range reps {
		if r.runs.Load() == 0 {
			t.Errorf("replica %d served no Go call", i)
		}
	}
}

// TestClientStreamStaysOnReplica: a stream opens on one replica and all
// its messages go there.
func TestClientStreamStaysOnReplica(t *testing.T) {
	net := newMemNet()
	var addrs []string
	var mu sync.Mutex
	served := map[string]int{} // server address -> messages
	for range 3 {
		srv := erpc.NewServer()
		var self string
		if err := srv.HandleStream("Chat", func(st erpc.ServerStream) error {
			for {
				msg, err := st.Recv()
				if err != nil {
					return nil
				}
				mu.Lock()
				served[self]++
				mu.Unlock()
				if err := st.Send(msg); err != nil {
					return err
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		ep := net.Listen(t, srv)
		mu.Lock() // the handler reads it under mu
		self = ep.Addr().String()
		mu.Unlock()
		addrs = append(addrs, ep.Addr().String())
	}
	name := newFleetName()
	testResolver.set(name, addrs...)
	c := newFleetClient(t, net, name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.NewStream(ctx, "Chat")
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if err := st.Send([]byte("m")); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	st.CloseSend()
	mu.Lock()
	defer mu.Unlock()
	if len(served) != 1 {
		t.Errorf("one stream's messages reached %d servers: %v", len(served), served)
	}
}

// TestClientHashKey: with the hashing balancer, calls with one key go to
// one replica.
func TestClientHashKey(t *testing.T) {
	net := newMemNet()
	reps := startReplicas(t, net, 3, 0)
	name := newFleetName()
	testResolver.set(name, addrsOf(reps)...)
	c := newFleetClient(t, net, name, erpc.WithBalancer(balancer.Hash()))
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	for _, key := range []string{"alice", "bob", "carol", "dave"} {
		before := make([]int64, len(reps))
		for i, r := range reps {
			before[i] = r.runs.Load()
		}
		ctx := erpc.ContextWithHashKey(context.Background(), key)
		for range 20 {
			if _, err := c.Call(ctx, "Echo", nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		got := 0
		for i, r := range reps {
			if r.runs.Load() != before[i] {
				got++
			}
		}
		if got != 1 {
			t.Errorf("key %q: 20 calls reached %d replicas, want 1", key, got)
		}
	}
}

// sessionCounter counts the sessions clients open to an endpoint.
type sessionCounter struct{ n *atomic.Int64 }

func (sessionCounter) CallBegin(ctx context.Context, _ erpc.CallInfo) context.Context { return ctx }
func (sessionCounter) CallEnd(context.Context, erpc.CallInfo, erpc.CallEnd)           {}
func (s sessionCounter) SessionEvent(ev erpc.SessionEvent) {
	if ev.Server && ev.Up {
		s.n.Add(1)
	}
}

// TestClientConnectRate: a Client with many replicas dials them no
// faster than WithConnectRate allows (its burst, then the rate).
func TestClientConnectRate(t *testing.T) {
	net := newMemNet()
	var accepted atomic.Int64
	var addrs []string
	for range 30 {
		addrs = append(addrs, net.Listen(t, rawEcho(t), erpc.WithStatsHandler(sessionCounter{&accepted})).Addr().String())
	}
	name := newFleetName()
	testResolver.set(name, addrs...)
	start := time.Now()
	c := newFleetClient(t, net, name, erpc.WithConnectRate(20)) // burst 2
	time.Sleep(300 * time.Millisecond)
	got := accepted.Load()
	elapsed := time.Since(start)
	if limit := 2 + int64(20*elapsed.Seconds()) + 1; got > limit {
		t.Errorf("%d sessions in %v, over the bound of %d (rate 20/s, burst 2)", got, elapsed, limit)
	}
	if got == 0 {
		t.Errorf("no session dialed in %v", elapsed)
	}
	waitReplicas(t, c, erpc.ReplicaReady, 30) // all come up, in time
}

// TestClientSessionAging: with WithMaxSessionAge, each replica's session
// is replaced now and then, and calls meanwhile never fail.
func TestClientSessionAging(t *testing.T) {
	net := newMemNet()
	var accepted atomic.Int64
	var addrs []string
	for range 2 {
		addrs = append(addrs, net.Listen(t, rawEcho(t), erpc.WithStatsHandler(sessionCounter{&accepted})).Addr().String())
	}
	name := newFleetName()
	testResolver.set(name, addrs...)
	c := newFleetClient(t, net, name, erpc.WithMaxSessionAge(30*time.Millisecond))
	waitReplicas(t, c, erpc.ReplicaReady, 2)
	deadline := time.Now().Add(400 * time.Millisecond)
	calls := 0
	for time.Now().Before(deadline) {
		if _, err := c.Call(context.Background(), "EchoInPlace", []byte("x"), nil); err != nil {
			t.Fatalf("call %d while sessions age out: %v", calls, err)
		}
		calls++
	}
	if n := accepted.Load(); n < 4 {
		t.Errorf("%d sessions opened in 400 ms with a 30 ms age, want several per replica", n)
	}
	t.Logf("%d calls, %d sessions", calls, accepted.Load())
}

// TestClientResolveNowOnDialFailure: a replica where nothing listens
// makes the Client ask its resolver for a fresh answer, and calls go to
// the replica that works meanwhile.
func TestClientResolveNowOnDialFailure(t *testing.T) {
	net := newMemNet()
	good := net.Listen(t, rawEcho(t))
	dead := net.Listen(t, nil)
	deadAddr := dead.Addr().String()
	dead.Close()
	name := newFleetName()
	testResolver.set(name, good.Addr().String(), deadAddr)
	before := testResolver.resolves.Load()
	c := newFleetClient(t, net, name)
	for range 20 {
		if _, err := c.Call(context.Background(), "EchoInPlace", []byte("x"), nil); err != nil {
			t.Fatalf("call with one replica dead: %v", err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for testResolver.resolves.Load() == before {
		if time.Now().After(deadline) {
			t.Fatalf("no ResolveNow 5 s after a dial failure: %+v", c.Replicas())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := replicaState(c, deadAddr); st != erpc.ReplicaConnecting {
		t.Errorf("dead replica is %v, want connecting", st)
	}
}

// TestClientBalancerChoice: over the real client, one replica of three
// ten times slower: power of two choices sends it few of the calls,
// round robin its third.
func TestClientBalancerChoice(t *testing.T) {
	for _, tc := range []struct {
		name     string
		bal      func() balancer.Balancer
		min, max float64 // the slow replica's share
	}{
		{"p2c", balancer.P2C, 0, 0.15},
		{"roundrobin", balancer.RoundRobin, 0.25, 0.42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := newMemNet()
			fast := startReplicas(t, net, 2, 200*time.Microsecond)
			slow := startReplicas(t, net, 1, 5*time.Millisecond)
			name := newFleetName()
			testResolver.set(name, append(addrsOf(fast), slow[0].addr)...)
			c := newFleetClient(t, net, name, erpc.WithBalancer(tc.bal()))
			waitReplicas(t, c, erpc.ReplicaReady, 3)
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 100 {
						if _, err := c.Call(context.Background(), "Echo", nil, nil); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			total := float64(fast[0].runs.Load() + fast[1].runs.Load() + slow[0].runs.Load())
			share := float64(slow[0].runs.Load()) / total
			t.Logf("slow replica's share: %.3f of %.0f calls", share, total)
			if share < tc.min || share > tc.max {
				t.Errorf("slow replica's share %.3f, want %.2f to %.2f", share, tc.min, tc.max)
			}
		})
	}
}
