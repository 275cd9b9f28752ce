package erpc_test

import (
	"context"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/balancer"
)

// TestReviewPolicyEdges: Hedge without Idempotent is refused at
// NewClient (both forms); MaxAttempts 1 tries one replica, 0 and a
// negative value three (the default); a call never ran on any.
func TestReviewPolicyEdges(t *testing.T) {
	net := newMemNet()
	name := newFleetName()
	ep := net.Listen(t, nil)
	if _, err := ep.NewClient("fleettest:///"+name, erpc.WithMethodPolicy("M", erpc.MethodPolicy{Hedge: time.Millisecond})); erpc.CodeOf(err) != erpc.InvalidArgument {
		t.Fatalf("hedge without Idempotent (Endpoint.NewClient): %v, want InvalidArgument", err)
	}
	if _, err := erpc.NewClient("127.0.0.1:1", erpc.WithMethodPolicy("M", erpc.MethodPolicy{Hedge: time.Millisecond, MaxAttempts: 2})); erpc.CodeOf(err) != erpc.InvalidArgument {
		t.Fatalf("hedge without Idempotent (NewClient): %v, want InvalidArgument", err)
	}

	reps := revMemFleet(t, net, 4)
	testResolver.set(name, revAddrs(reps)...)
	for _, tc := range []struct{ max, want int }{{1, 1}, {0, 3}, {-1, 3}, {2, 2}, {4, 4}} {
		c := newFleetClient(t, net, name, erpc.WithMethodPolicy("Nope", erpc.MethodPolicy{MaxAttempts: tc.max}))
		waitReplicas(t, c, erpc.ReplicaReady, 4)
		var before int64
		for _, r := range reps {
			before += r.arrived.Load()
		}
		_, err := c.Call(context.Background(), "Nope", nil, nil)
		var after int64
		for _, r := range reps {
			after += r.arrived.Load()
		}
		if !erpc.NotExecuted(err) {
			t.Fatalf("MaxAttempts %d: %v, want a never-ran refusal", tc.max, err)
		}
		if got := int(after - before); got != tc.want {
			t.Fatalf("MaxAttempts %d: %d attempts, want %d", tc.max, got, tc.want)
		}
		c.Close()
	}
}

// TestReviewConnectRateOddValues: WithConnectRate(NaN, +Inf, negative,
// 0). The balancer package: "A NaN or infinite float setting never lifts
// a bound"; the Option doc: an out-of-range value fails with
// InvalidArgument. Either NewClient refuses it, or the client dials at
// most at the default pace (100 a second, burst 10). 150 replicas whose
// ports have no listener: count the client's dials in the first 600 ms.
func TestReviewConnectRateOddValues(t *testing.T) {
	var addrs []string
	for range 150 {
		addrs = append(addrs, revFreeUDP(t))
	}
	target := "static:///" + strings.Join(addrs, ",")
	for _, rate := range []float64{math.NaN(), math.Inf(1), -1, 0} {
		var dials atomic.Int64
		c, err := erpc.NewClient(target, erpc.WithConnectRate(rate), erpc.WithFailureTimeout(100*time.Millisecond),
			erpc.WithStatsHandler(revStats{dials: &dials}))
		if err != nil {
			if erpc.CodeOf(err) != erpc.InvalidArgument {
				t.Fatalf("rate %v: %v", rate, err)
			}
			continue
		}
		time.Sleep(600 * time.Millisecond)
		n := dials.Load()
		c.Close()
		// 10 (burst) + 100/s × 0.6 s = 70, and half again for slack.
		if n > 105 {
			t.Errorf("WithConnectRate(%v) accepted, and the client dialed %d sessions in 600 ms (the default allows 70)", rate, n)
		} else {
			t.Logf("WithConnectRate(%v): %d dials in 600 ms", rate, n)
		}
	}
}

// TestReviewCloseWithCallsAndHedgesInFlight: calls (hedged ones with
// both copies held, and Go calls) are in flight when the Client closes.
// Every call ends, each Go callback runs once, the servers' sessions go
// away, the endpoint NewClient opened closes, and no goroutine is left.
func TestReviewCloseWithCallsAndHedgesInFlight(t *testing.T) {
	checkLeaks(t)
	var holding atomic.Int64
	release := make(chan struct{})
	var addrs []string
	var eps []*erpc.Endpoint
	for range 2 {
		srv := erpc.NewServer()
		srv.Handle("Hold", func(ctx context.Context, req []byte) ([]byte, error) {
			holding.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return req, nil
		}, erpc.Background())
		a := revFreeUDP(t)
		ep, err := srv.Listen(a)
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
		addrs = append(addrs, a)
	}
	defer func() {
		for _, ep := range eps {
			ep.Close()
		}
	}()
	defer close(release)
	c, err := erpc.NewClient("static:///"+strings.Join(addrs, ","),
		erpc.WithMethodPolicy("Hold", erpc.MethodPolicy{Idempotent: true, Hedge: 5 * time.Millisecond, MaxAttempts: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if !revWait(3*time.Second, func() bool { return revCountState(c, erpc.ReplicaReady) == 2 }) {
		t.Fatalf("not ready: %+v", c.Replicas())
	}
	const calls, gos = 4, 4
	errs := make(chan error, calls)
	for range calls {
		go func() { _, err := c.Call(context.Background(), "Hold", []byte("x"), nil); errs <- err }()
	}
	var goDone [gos]atomic.Int64
	goErrs := make(chan error, gos*2)
	for i := range gos {
		c.Go("Hold", []byte("y"), nil, func(_ []byte, err error) {
			goDone[i].Add(1)
			goErrs <- err
		})
	}
	// every hedged call has both copies held, and the Go calls theirs
	if !revWait(3*time.Second, func() bool { return holding.Load() == calls*2+gos }) {
		t.Fatalf("%d calls held, want %d", holding.Load(), calls*2+gos)
	}
	ep := c.Endpoint()
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for range calls {
		select {
		case err := <-errs:
			if err == nil {
				t.Fatal("a held call succeeded after Close")
			}
		case <-time.After(3 * time.Second):
			t.Fatal("a hedged call still waits after Close")
		}
	}
	for range gos {
		select {
		case err := <-goErrs:
			if err == nil {
				t.Fatal("a held Go call succeeded after Close")
			}
		case <-time.After(3 * time.Second):
			t.Fatal("a Go call's callback never ran after Close")
		}
	}
	time.Sleep(50 * time.Millisecond)
	for i := range gos {
		if n := goDone[i].Load(); n != 1 {
			t.Fatalf("Go callback %d ran %d times", i, n)
		}
	}
	if len(c.Replicas()) != 0 {
		t.Fatalf("replicas after Close: %+v", c.Replicas())
	}
	if _, err := ep.Dial(context.Background(), addrs[0]); err == nil {
		t.Fatal("the endpoint NewClient opened is still open after Close")
	}
	if !revWait(3*time.Second, func() bool {
		n := 0
		for _, e := range eps {
			n += e.Stats().ServerSessions
		}
		return n == 0
	}) {
		t.Fatalf("servers still hold sessions of the closed client")
	}
}

// TestReviewEjectionCapAndReturn: three of four replicas fail every call
// (Internal). At most half (2) may be ejected at once; once they heal,
// probes bring every replica back to ready.
func TestReviewEjectionCapAndReturn(t *testing.T) {
	defer erpc.SetEjectTiming(2, 50*time.Millisecond)()
	net := newMemNet()
	reps := revMemFleet(t, net, 4)
	for _, r := range reps[1:] {
		r.panicing.Store(true)
	}
	name := newFleetName()
	testResolver.set(name, revAddrs(reps)...)
	c := newFleetClient(t, net, name)
	waitReplicas(t, c, erpc.ReplicaReady, 4)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var fails atomic.Int64
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
				if _, err := c.Call(context.Background(), "Boom", nil, nil); err != nil {
					fails.Add(1)
				}
			}
		}()
	}
	worst, sawEjected := 0, false
	deadline := time.Now().Add(800 * time.Millisecond)
	for time.Now().Before(deadline) {
		n := revCountState(c, erpc.ReplicaEjected)
		worst = max(worst, n)
		sawEjected = sawEjected || n > 0
		time.Sleep(time.Millisecond)
	}
	for _, r := range reps[1:] {
		r.panicing.Store(false)
	}
	back := revWait(5*time.Second, func() bool { return revCountState(c, erpc.ReplicaReady) == 4 })
	close(stop)
	wg.Wait()
	if fails.Load() == 0 || !sawEjected {
		t.Fatalf("no failure (%d) or no ejection seen: the fault was not injected", fails.Load())
	}
	if worst > 2 {
		t.Fatalf("%d of 4 replicas ejected at once, at most half allowed", worst)
	}
	if !back {
		t.Fatalf("healed replicas not back: %+v", c.Replicas())
	}
}

// TestReviewAddressSetEdges: an empty set fails a call as never run
// (Unavailable, NotExecuted) after at most the failure timeout; the same
// address twice is one replica; a blackhole beside a live replica takes
// no call and stays connecting.
func TestReviewAddressSetEdges(t *testing.T) {
	net := newMemNet()
	reps := revMemFleet(t, net, 1)
	name := newFleetName()
	testResolver.set(name) // empty
	c := newFleetClient(t, net, name)
	t0 := time.Now()
	_, err := c.Call(context.Background(), "Echo", nil, nil)
	if erpc.CodeOf(err) != erpc.Unavailable || !erpc.NotExecuted(err) {
		t.Fatalf("empty set: %v, want Unavailable, never ran", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("empty set: the call waited %v (failure timeout 300 ms)", d)
	}
	testResolver.set(name, reps[0].addr, reps[0].addr)
	waitReplicas(t, c, erpc.ReplicaReady, 1)
	if n := len(c.Replicas()); n != 1 {
		t.Fatalf("the same address twice: %d replicas: %+v", n, c.Replicas())
	}
	for range 20 {
		if _, err := c.Call(context.Background(), "Echo", nil, nil); err != nil {
			t.Fatal(err)
		}
	}

	// a blackhole (reads and drops) beside a live UDP replica
	bh, err := net2UDP()
	if err != nil {
		t.Fatal(err)
	}
	defer bh.Close()
	var dropped atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := bh.ReadFromUDP(buf); err != nil {
				return
			}
			dropped.Add(1)
		}
	}()
	srv, live := revNewServer(t)
	lep, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lep.Close()
	uc, err := erpc.NewClient("static:///"+lep.Addr().String()+","+bh.LocalAddr().String(), erpc.WithFailureTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	for i := range 50 {
		if _, err := uc.Call(context.Background(), "Echo", nil, nil); err != nil {
			t.Fatalf("call %d with a blackhole replica: %v (%+v)", i, err, uc.Replicas())
		}
	}
	if dropped.Load() == 0 {
		t.Fatal("the blackhole got nothing: the fault was not injected")
	}
	if live.runs.Load() != 50 {
		t.Fatalf("live replica ran %d of 50", live.runs.Load())
	}
	for _, r := range uc.Replicas() {
		if r.Addr == bh.LocalAddr().String() && r.State == erpc.ReplicaReady {
			t.Fatalf("blackhole reported ready: %+v", r)
		}
	}
}

func net2UDP() (*net.UDPConn, error) {
	return net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
}

// TestReviewAllReplicasDraining: both servers shut down (each kept
// waiting by a held call). New calls cannot run: they fail as never run,
// and no handler runs them; the held calls end normally and every
// Shutdown returns without cutting a call.
func TestReviewAllReplicasDraining(t *testing.T) {
	net := newMemNet()
	reps := revMemFleet(t, net, 2)
	name := newFleetName()
	testResolver.set(name, revAddrs(reps)...)
	c := newFleetClient(t, net, name, erpc.WithMethodPolicy("Hold", erpc.MethodPolicy{Idempotent: true}))
	waitReplicas(t, c, erpc.ReplicaReady, 2)
	held := make(chan error, 2)
	for range 2 {
		go func() { _, err := c.Call(context.Background(), "Hold", nil, nil); held <- err }()
	}
	if !revWait(2*time.Second, func() bool { return reps[0].holding.Load()+reps[1].holding.Load() == 2 }) {
		t.Fatal("held calls not running")
	}
	shut := make(chan error, 2)
	for _, r := range reps {
		go func() { shut <- r.ep.Shutdown(context.Background()) }()
	}
	waitReplicas(t, c, erpc.ReplicaDraining, 2)
	runs := reps[0].runs.Load() + reps[1].runs.Load()
	for range 5 {
		_, err := c.Call(context.Background(), "Echo", nil, nil)
		if err == nil || !erpc.NotExecuted(err) {
			t.Fatalf("all draining: %v, want a never-ran failure", err)
		}
	}
	if d := reps[0].runs.Load() + reps[1].runs.Load() - runs; d != 0 {
		t.Fatalf("%d calls ran on draining servers", d)
	}
	for _, r := range reps {
		close(r.release)
	}
	for range 2 {
		if err := <-held; err != nil {
			t.Fatalf("a call in flight during Shutdown failed: %v", err)
		}
	}
	for range 2 {
		select {
		case err := <-shut:
			if err != nil {
				t.Fatalf("shutdown: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("shutdown never returned")
		}
	}
}

// TestReviewCancelMidFailover: the caller's context is canceled after a
// call's first attempt was refused (never ran): no further attempt goes.
func TestReviewCancelMidFailover(t *testing.T) {
	net := newMemNet()
	reps := revMemFleet(t, net, 3)
	name := newFleetName()
	testResolver.set(name, revAddrs(reps)...)
	var attempts atomic.Int64
	var cancelMu sync.Mutex
	var cancelFn context.CancelFunc
	icpt := func(ctx context.Context, method string, req, resp any, s *erpc.Session, invoke erpc.UnaryInvoker) error {
		attempts.Add(1)
		err := invoke(ctx, method, req, resp)
		cancelMu.Lock()
		cancelFn()
		cancelMu.Unlock()
		return err
	}
	ep := net.Listen(t, nil, erpc.WithUnaryClientInterceptors(icpt))
	c, err := ep.NewClient("fleettest:///" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	for range 10 {
		ctx, cancel := context.WithCancel(context.Background())
		cancelMu.Lock()
		cancelFn = cancel
		cancelMu.Unlock()
		a0 := attempts.Load()
		_, err := c.Call(ctx, "Nope", nil, nil)
		if err == nil {
			t.Fatal("Nope succeeded")
		}
		if n := attempts.Load() - a0; n != 1 {
			t.Fatalf("%d attempts after the context was canceled in the first (err %v)", n, err)
		}
	}
}

// TestReviewStatsNameTheReplica: each attempt of a call that fails over
// reaches the client's StatsHandler with the replica it went to: Peer is
// that replica's address and Target its address as resolved; the
// attempts of a call cover the replicas the servers saw.
func TestReviewStatsNameTheReplica(t *testing.T) {
	net := newMemNet()
	reps := revMemFleet(t, net, 3)
	name := newFleetName()
	testResolver.set(name, revAddrs(reps)...)
	sh := &revPeerStats{}
	ep := net.Listen(t, nil, erpc.WithStatsHandler(sh))
	c, err := ep.NewClient("fleettest:///"+name, erpc.WithBalancer(balancer.RoundRobin()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	for range 5 {
		sh.reset()
		if _, err := c.Call(context.Background(), "Nope", nil, nil); !erpc.NotExecuted(err) {
			t.Fatalf("Nope: %v", err)
		}
		got := sh.take()
		if len(got) != 3 {
			t.Fatalf("%d attempts seen by the StatsHandler, want 3: %v", len(got), got)
		}
		seen := map[string]bool{}
		for _, a := range got {
			if a.peer != a.target {
				t.Fatalf("attempt Peer %s, Target %s", a.peer, a.target)
			}
			seen[a.peer] = true
		}
		for _, r := range reps {
			if !seen[r.addr] {
				t.Fatalf("replica %s tried but not named: %v", r.addr, got)
			}
		}
	}
	// Replicas' counters: every attempt counted, all failures
	var calls, fails uint64
	for _, r := range c.Replicas() {
		calls += r.Calls
		fails += r.Failures
	}
	if calls != 15 || fails != 15 {
		t.Fatalf("Replicas counts %d calls, %d failures; want 15 and 15", calls, fails)
	}
}

type revPeerAttempt struct{ peer, target string }

type revPeerStats struct {
	mu  sync.Mutex
	got []revPeerAttempt
}

func (s *revPeerStats) CallBegin(ctx context.Context, info erpc.CallInfo) context.Context {
	if !info.Server {
		s.mu.Lock()
		s.got = append(s.got, revPeerAttempt{info.Peer.String(), info.Target})
		s.mu.Unlock()
	}
	return ctx
}
func (*revPeerStats) CallEnd(context.Context, erpc.CallInfo, erpc.CallEnd) {}
func (*revPeerStats) SessionEvent(erpc.SessionEvent)                       {}
func (s *revPeerStats) reset()                                             { s.mu.Lock(); s.got = nil; s.mu.Unlock() }
func (s *revPeerStats) take() []revPeerAttempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]revPeerAttempt(nil), s.got...)
}
