package erpc_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// revFleetKillProxy is revKillProxy for many clients: a server killed
// (kill -9: no closing notice) and restarted at the same address. Each
// client address gets an upstream socket of its own to the current
// backend; a kill starts a fresh backend and drops every upstream, so
// whatever the old backend still sends goes nowhere and the clients'
// next packets reach a server that never heard of their sessions. The
// backends count their accepted sessions per second since start.
type revFleetKillProxy struct {
	t       *testing.T
	ln      *net.UDPConn
	mu      sync.Mutex
	back    *net.UDPAddr
	ups     map[string]*net.UDPConn // by client address
	eps     []*erpc.Endpoint
	start   time.Time
	buckets *[64]atomic.Int64
	accepts atomic.Int64
}

func revNewFleetKillProxy(t *testing.T, start time.Time, buckets *[64]atomic.Int64) *revFleetKillProxy {
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p := &revFleetKillProxy{t: t, ln: ln, start: start, buckets: buckets, ups: map[string]*net.UDPConn{}}
	p.kill()
	go p.relay()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, up := range p.ups {
			up.Close()
		}
		for _, ep := range p.eps {
			ep.Close()
		}
	})
	return p
}

func (p *revFleetKillProxy) addr() string { return p.ln.LocalAddr().String() }

// relay forwards each client's packets over its upstream socket.
func (p *revFleetKillProxy) relay() {
	buf := make([]byte, 65536)
	for {
		n, from, err := p.ln.ReadFromUDP(buf)
		if err != nil {
			return
		}
		p.mu.Lock()
		up := p.ups[from.String()]
		if up == nil {
			if up, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err != nil {
				p.mu.Unlock()
				continue
			}
			p.ups[from.String()] = up
			go p.back2client(up, from)
		}
		back := p.back
		p.mu.Unlock()
		up.WriteToUDP(buf[:n], back)
	}
}

func (p *revFleetKillProxy) back2client(up *net.UDPConn, client *net.UDPAddr) {
	buf := make([]byte, 65536)
	for {
		n, _, err := up.ReadFromUDP(buf)
		if err != nil {
			return
		}
		p.ln.WriteToUDP(buf[:n], client)
	}
}

// kill replaces the backend with a fresh server; the old one is cut off.
func (p *revFleetKillProxy) kill() {
	st := revStats{ups: &p.accepts, onUp: func() {
		if s := int(time.Since(p.start) / time.Second); s < len(p.buckets) {
			p.buckets[s].Add(1)
		}
	}}
	ep, err := serverWith(p.t, "Echo", echoHandler).Listen("127.0.0.1:0", erpc.WithStatsHandler(st))
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	old := p.ups
	p.ups = map[string]*net.UDPConn{}
	p.back = net.UDPAddrFromAddrPort(ep.Addr())
	p.eps = append(p.eps, ep)
	p.mu.Unlock()
	for _, up := range old {
		up.Close()
	}
}

// TestReviewKillStormAllRecover: 30 Clients (WithConnectRate(2) each,
// burst 1) under steady load over four servers that are all killed at
// once (no closing notice) and restarted on their addresses. The new
// servers reset the old sessions' packets, and calls sent since the
// restart provably never ran. Every Client must serve again (it needs
// one replica) and redial all four, and the servers must never see more
// connects in a second than 30 × (2 a second + a burst of 1). (It failed
// when a reset of a call that never ran detached the session without
// counting the down: the Client kept the dead session as ready, every
// call on it failed at once, and it never redialed.)
func TestReviewKillStormAllRecover(t *testing.T) {
	start := time.Now()
	var buckets [64]atomic.Int64
	const n, clients, rate = 4, 30, 2
	var ps []*revFleetKillProxy
	var addrs []string
	for range n {
		p := revNewFleetKillProxy(t, start, &buckets)
		ps = append(ps, p)
		addrs = append(addrs, p.addr())
	}
	var cs []*erpc.Client
	for range clients {
		c, err := erpc.NewClient("static:///"+strings.Join(addrs, ","), erpc.WithConnectRate(rate))
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
	for _, c := range cs {
		if !revWait(5*time.Second, func() bool { return revCountState(c, erpc.ReplicaReady) == n }) {
			t.Fatalf("not ready: %+v", c.Replicas())
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls, fails atomic.Int64
	var killed atomic.Pointer[time.Time]
	answered := make([]atomic.Bool, clients) // a call answered since the kill
	for i, c := range cs {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Millisecond):
					}
					ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
					_, err := c.Call(ctx, "Echo", []byte("x"), nil)
					cancel()
					calls.Add(1)
					if err != nil {
						fails.Add(1)
					} else if t0 := killed.Load(); t0 != nil && time.Since(*t0) > 0 {
						answered[i].Store(true)
					}
				}
			}()
		}
	}
	time.Sleep(1500 * time.Millisecond) // every Client's bucket is full again
	s0 := int(time.Since(start) / time.Second)
	accepts0 := int64(0)
	for _, p := range ps {
		accepts0 += p.accepts.Load()
	}
	fails0 := fails.Load()
	for _, p := range ps {
		p.kill()
	}
	t0 := time.Now()
	killed.Store(&t0)
	served := revWait(3*time.Second, func() bool {
		for i := range answered {
			if !answered[i].Load() {
				return false
			}
		}
		return true
	})
	allReady := 0
	for _, c := range cs {
		if revWait(time.Until(t0.Add(5*time.Second)), func() bool { return revCountState(c, erpc.ReplicaReady) == n }) {
			allReady++
		}
	}
	close(stop)
	wg.Wait()
	s1 := int(time.Since(start) / time.Second)
	missing := 0
	for i := range answered {
		if !answered[i].Load() {
			missing++
		}
	}
	reconnects := int64(0)
	for _, p := range ps {
		reconnects += p.accepts.Load()
	}
	reconnects -= accepts0
	var per []int64
	worst := int64(0)
	for s := s0; s <= s1 && s < len(buckets); s++ {
		per = append(per, buckets[s].Load())
		worst = max(worst, buckets[s].Load())
	}
	t.Logf("%d calls (%d failed since the kill); %d sessions reopened; %d of %d Clients served within 3 s, %d redialed all %d replicas within 5 s; connects per second at the servers: %v",
		calls.Load(), fails.Load()-fails0, reconnects, clients-missing, clients, allReady, n, per)
	if calls.Load() == 0 || fails.Load() == fails0 || reconnects == 0 {
		t.Fatal("no load, no failed call or no reconnect: the kill was not felt")
	}
	if !served {
		t.Fatalf("%d of %d Clients had no call answered within 3 s of the kill", missing, clients)
	}
	if allReady != clients {
		t.Fatalf("%d of %d Clients redialed all %d replicas within 5 s of the kill", allReady, clients, n)
	}
	if limit := int64(clients * (rate + 1)); worst > limit {
		t.Fatalf("%d connects in one second at the servers; %d Clients at %d/s (burst 1) allow %d: per second %v", worst, clients, rate, limit, per)
	}
}
