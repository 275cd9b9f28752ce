package erpc_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// revUDPReplica is a loopback UDP server that can be restarted on its
// port; every incarnation counts its accepted sessions in ups, bucketed
// by the second since start.
type revUDPReplica struct {
	t       *testing.T
	addr    string
	mu      sync.Mutex
	ep      *erpc.Endpoint
	ups     atomic.Int64
	runs    atomic.Int64
	start   time.Time
	buckets *[64]atomic.Int64
}

func revStartUDP(t *testing.T, start time.Time, buckets *[64]atomic.Int64) *revUDPReplica {
	r := &revUDPReplica{t: t, addr: revFreeUDP(t), start: start, buckets: buckets}
	r.listen()
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.ep != nil {
			r.ep.Close()
		}
	})
	return r
}

func (r *revUDPReplica) listen() {
	srv := erpc.NewServer()
	if err := srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) {
		r.runs.Add(1)
		return req, nil
	}); err != nil {
		r.t.Fatal(err)
	}
	st := revStats{ups: &r.ups, onUp: func() {
		if s := int(time.Since(r.start) / time.Second); s < len(r.buckets) {
			r.buckets[s].Add(1)
		}
	}}
	var ep *erpc.Endpoint
	var err error
	for range 100 { // the port was just freed
		if ep, err = srv.Listen(r.addr, erpc.WithStatsHandler(st)); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		r.t.Fatalf("relisten %s: %v", r.addr, err)
	}
	r.mu.Lock()
	r.ep = ep
	r.mu.Unlock()
}

// restart closes the server abruptly and starts a new one on its port.
func (r *revUDPReplica) restart() {
	r.mu.Lock()
	ep := r.ep
	r.ep = nil
	r.mu.Unlock()
	ep.Close()
	r.listen()
}

// TestReviewConnectRateAcrossRestarts: one Client with
// WithConnectRate(4) (a token bucket: 4 a second, burst 1) over twelve
// loopback servers, under load from 24 callers; all twelve restart
// at once (Close, then a new server on the same port). The doc: the
// Client dials at most 4 sessions a second over all its replicas, "a
// fleet that restarts at once is redialed at this pace". Counted at the
// servers (sessions accepted in the second after the restart) and at the
// client (its sessions that came up or failed to connect).
func TestReviewConnectRateAcrossRestarts(t *testing.T) {
	start := time.Now()
	var buckets [64]atomic.Int64
	const n = 12
	var reps []*revUDPReplica
	var addrs []string
	for range n {
		r := revStartUDP(t, start, &buckets)
		reps = append(reps, r)
		addrs = append(addrs, r.addr)
	}
	var dials atomic.Int64
	c, err := erpc.NewClient("static:///"+strings.Join(addrs, ","),
		erpc.WithConnectRate(4), erpc.WithFailureTimeout(300*time.Millisecond),
		erpc.WithStatsHandler(revStats{dials: &dials}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !revWait(5*time.Second, func() bool { return revCountState(c, erpc.ReplicaReady) == n }) {
		t.Fatalf("not ready: %+v", c.Replicas())
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls, fails atomic.Int64
	for range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				if _, err := c.Call(ctx, "Echo", []byte("x"), nil); err != nil {
					fails.Add(1)
				}
				cancel()
				calls.Add(1)
			}
		}()
	}
	time.Sleep(1200 * time.Millisecond) // the bucket is full again (one token)
	ups := func() (s int64) {
		for _, r := range reps {
			s += r.ups.Load()
		}
		return s
	}
	ups0, dials0 := ups(), dials.Load()
	t0 := time.Now()
	for _, r := range reps {
		r.restart()
	}
	time.Sleep(time.Second - time.Since(t0))
	elapsed := time.Since(t0)
	nu, nd := ups()-ups0, dials.Load()-dials0
	close(stop)
	wg.Wait()
	limit := int64(4*elapsed.Seconds()) + 1
	t.Logf("all %d servers restarted: in the next %v the servers accepted %d sessions, the client made %d dials; %d calls (%d failed)",
		n, elapsed.Round(time.Millisecond), nu, nd, calls.Load(), fails.Load())
	if calls.Load() == 0 || nd == 0 {
		t.Fatal("no load or no redial: the fault was not injected")
	}
	if nu > limit || nd > limit {
		t.Fatalf("WithConnectRate(4) allows at most %d connects in %v; the servers accepted %d sessions and the client made %d dials",
			limit, elapsed.Round(time.Millisecond), nu, nd)
	}
}

// TestReviewRestartStorm: 50 Clients (WithConnectRate(1) each) over two
// loopback servers that restart at once, twice. Per second, the servers
// may see at most 50 × (1 a second + a burst of 1) connects.
func TestReviewRestartStorm(t *testing.T) {
	start := time.Now()
	var buckets [64]atomic.Int64
	a, b := revStartUDP(t, start, &buckets), revStartUDP(t, start, &buckets)
	const clients = 50
	var cs []*erpc.Client
	for range clients {
		c, err := erpc.NewClient(fmt.Sprintf("static:///%s,%s", a.addr, b.addr),
			erpc.WithConnectRate(1), erpc.WithFailureTimeout(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for _, c := range cs { // the bucket starts with one token: the second replica waits up to a second
		if !revWait(5*time.Second, func() bool { return revCountState(c, erpc.ReplicaReady) == 2 }) {
			t.Fatalf("not ready: %+v", c.Replicas())
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls atomic.Int64
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				c.Call(ctx, "Echo", []byte("x"), nil)
				cancel()
				calls.Add(1)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	s0 := int(time.Since(start)/time.Second) + 1
	for range 2 {
		a.restart()
		b.restart()
		time.Sleep(1500 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	s1 := int(time.Since(start) / time.Second)
	recovered := 0
	for _, c := range cs {
		if revWait(3*time.Second, func() bool { return revCountState(c, erpc.ReplicaReady) == 2 }) {
			recovered++
		}
	}
	var per []int64
	worst := int64(0)
	for s := s0; s < s1 && s < len(buckets); s++ {
		n := buckets[s].Load()
		per = append(per, n)
		worst = max(worst, n)
	}
	t.Logf("connects per second at the servers (from second %d): %v; %d calls; %d of %d clients recovered", s0, per, calls.Load(), recovered, clients)
	if calls.Load() == 0 {
		t.Fatal("no load")
	}
	if recovered != clients {
		t.Fatalf("%d of %d clients recovered both replicas", recovered, clients)
	}
	if limit := int64(clients * 2); worst > limit {
		t.Fatalf("%d connects in one second at the servers; 50 clients at 1/s (burst 1) allow %d: per second %v", worst, limit, per)
	}
}

// revKillProxy stands for a server that is killed (kill -9: no closing
// notice) and restarted at the same address: clients send to the proxy's
// address, which relays to the current backend over an upstream socket
// of its own; a kill swaps in a fresh backend and upstream socket, and
// whatever the old backend still sends goes nowhere.
type revKillProxy struct {
	t      *testing.T
	ln     *net.UDPConn
	mu     sync.Mutex
	client *net.UDPAddr
	up     *net.UDPConn
	back   *net.UDPAddr
	eps    []*erpc.Endpoint
	ups    atomic.Int64
	srv    func() *erpc.Server
	done   chan struct{}
}

func revNewKillProxy(t *testing.T, srv func() *erpc.Server) *revKillProxy {
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p := &revKillProxy{t: t, ln: ln, srv: srv, done: make(chan struct{})}
	p.kill()
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := ln.ReadFromUDP(buf)
			if err != nil {
				return
			}
			p.mu.Lock()
			p.client = from
			up, back := p.up, p.back
			p.mu.Unlock()
			up.WriteToUDP(buf[:n], back)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.up.Close()
		for _, ep := range p.eps {
			ep.Close()
		}
	})
	return p
}

func (p *revKillProxy) addr() string { return p.ln.LocalAddr().String() }

// kill replaces the backend with a fresh server; the old one is cut off.
func (p *revKillProxy) kill() {
	ep, err := p.srv().Listen("127.0.0.1:0", erpc.WithStatsHandler(revStats{ups: &p.ups}))
	if err != nil {
		p.t.Fatal(err)
	}
	up, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		p.t.Fatal(err)
	}
	a := ep.Addr()
	p.mu.Lock()
	old := p.up
	p.up, p.back = up, net.UDPAddrFromAddrPort(a)
	p.eps = append(p.eps, ep)
	p.mu.Unlock()
	if old != nil {
		old.Close()
	}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, _, err := up.ReadFromUDP(buf)
			if err != nil {
				return
			}
			p.mu.Lock()
			cl := p.client
			p.mu.Unlock()
			if cl != nil {
				p.ln.WriteToUDP(buf[:n], cl)
			}
		}
	}()
}

// TestReviewConnectRateAcrossKills: as TestReviewConnectRateAcrossRestarts,
// but the server is killed (no closing notice: the new incarnation
// answers the client's next packets with a reset) every 1.2 s, six times.
func TestReviewConnectRateAcrossKills(t *testing.T) {
	echo := func() *erpc.Server {
		return serverWith(t, "Echo", echoHandler)
	}
	p := revNewKillProxy(t, echo)
	var dials atomic.Int64
	c, err := erpc.NewClient("static:///"+p.addr(),
		erpc.WithConnectRate(1), erpc.WithFailureTimeout(300*time.Millisecond),
		erpc.WithStatsHandler(revStats{dials: &dials}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !revWait(3*time.Second, func() bool { return revCountState(c, erpc.ReplicaReady) == 1 }) {
		t.Fatalf("not ready: %+v", c.Replicas())
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls, fails atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				if _, err := c.Call(ctx, "Echo", []byte("x"), nil); err != nil {
					fails.Add(1)
				}
				cancel()
				calls.Add(1)
			}
		}()
	}
	t0 := time.Now()
	ups0, dials0 := p.ups.Load(), dials.Load()
	kills := 0
	for range 6 {
		time.Sleep(1200 * time.Millisecond)
		p.kill()
		kills++
	}
	time.Sleep(300 * time.Millisecond)
	elapsed := time.Since(t0)
	close(stop)
	wg.Wait()
	ups, nd := p.ups.Load()-ups0, dials.Load()-dials0
	limit := int64(1*elapsed.Seconds()) + 1 + 1
	t.Logf("%d kills in %v: %d sessions accepted by the servers, %d client dials, %d calls (%d failed)",
		kills, elapsed.Round(time.Millisecond), ups, nd, calls.Load(), fails.Load())
	if kills == 0 || calls.Load() == 0 {
		t.Fatal("no kill or no load: the fault was not injected")
	}
	if ups > limit || nd > limit {
		t.Fatalf("WithConnectRate(1) over %v allows at most %d connects; the servers accepted %d sessions and the client made %d dials",
			elapsed.Round(time.Millisecond), limit, ups, nd)
	}
}
