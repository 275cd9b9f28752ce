package erpc_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/resolver"
)

// fleetResolver is a resolver the test controls: "fleettest:///name"
// watches the address set set(name, ...) last gave.
type fleetResolver struct {
	mu       sync.Mutex
	sets     map[string][]resolver.Address
	watchers map[string][]resolver.Watcher
	resolves atomic.Int64 // ResolveNow calls
}

var testResolver = func() *fleetResolver {
	r := &fleetResolver{sets: map[string][]resolver.Address{}, watchers: map[string][]resolver.Watcher{}}
	resolver.Register(r)
	return r
}()

var fleetNames atomic.Int64

// newFleetName is a target name no other test uses.
func newFleetName() string { return fmt.Sprintf("fleet%d", fleetNames.Add(1)) }

func (r *fleetResolver) Scheme() string { return "fleettest" }

func (r *fleetResolver) Build(t resolver.Target, w resolver.Watcher) (resolver.Resolver, error) {
	r.mu.Lock()
	r.watchers[t.Endpoint] = append(r.watchers[t.Endpoint], w)
	set, ok := r.sets[t.Endpoint]
	r.mu.Unlock()
	if ok {
		w.Update(resolver.State{Addresses: set})
	}
	return &fleetWatch{r: r, name: t.Endpoint, w: w}, nil
}

// set replaces name's addresses and tells its watchers.
func (r *fleetResolver) set(name string, addrs ...string) {
	var set []resolver.Address
	for _, a := range addrs {
		set = append(set, resolver.Address{Addr: a})
	}
	r.setAddrs(name, set...)
}

// setAddrs is set with each address's attributes (an SRV target...).
func (r *fleetResolver) setAddrs(name string, set ...resolver.Address) {
	r.mu.Lock()
	r.sets[name] = set
	ws := append([]resolver.Watcher(nil), r.watchers[name]...)
	r.mu.Unlock()
	for _, w := range ws {
		w.Update(resolver.State{Addresses: set})
	}
}

type fleetWatch struct {
	r    *fleetResolver
	name string
	w    resolver.Watcher
}

func (f *fleetWatch) ResolveNow() { f.r.resolves.Add(1) }

func (f *fleetWatch) Close() {
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	ws := f.r.watchers[f.name]
	for i, w := range ws {
		if w == f.w {
			f.r.watchers[f.name] = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
}

// replicaServer is one server of a test fleet, counting what its handler
// runs and what reaches it (refused requests included).
type replicaServer struct {
	ep      *erpc.Endpoint
	addr    string
	runs    atomic.Int64  // handler executions
	arrived atomic.Int64  // requests that reached the endpoint
	release chan struct{} // ends the "Hold" calls
	holding atomic.Int64  // "Hold" calls started
}

// arrivals is a StatsHandler counting the requests an endpoint serves or
// refuses.
type arrivals struct{ n *atomic.Int64 }

func (a arrivals) CallBegin(ctx context.Context, info erpc.CallInfo) context.Context {
	if info.Server {
		a.n.Add(1)
	}
	return ctx
}
func (arrivals) CallEnd(context.Context, erpc.CallInfo, erpc.CallEnd) {}
func (arrivals) SessionEvent(erpc.SessionEvent)                       {}

// startReplicas starts n servers on net whose "Echo" echoes after delay
// and counts its runs.
func startReplicas(t *testing.T, net *memNet, n int, delay time.Duration, opts ...erpc.Option) []*replicaServer {
	t.Helper()
	var out []*replicaServer
	for range n {
		rs := &replicaServer{release: make(chan struct{})}
		srv := erpc.NewServer()
		if err := srv.Handle("Hold", func(ctx context.Context, req []byte) ([]byte, error) {
			rs.holding.Add(1)
			<-rs.release
			return req, nil
		}, erpc.Background()); err != nil {
			t.Fatal(err)
		}
		if err := srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) {
			rs.runs.Add(1)
			if delay > 0 {
				time.Sleep(delay)
			}
			return req, nil
		}, erpc.Background()); err != nil {
			t.Fatal(err)
		}
		rs.ep = net.Listen(t, srv, append(opts, erpc.WithStatsHandler(arrivals{&rs.arrived}))...)
		rs.addr = rs.ep.Addr().String()
		out = append(out, rs)
	}
	return out
}

func addrsOf(rs []*replicaServer) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.addr)
	}
	return out
}

// newFleetClient makes a Client on a fresh endpoint of net over the test
// resolver's name, closed when the test ends.
func newFleetClient(t *testing.T, net *memNet, name string, opts ...erpc.Option) *erpc.Client {
	t.Helper()
	ep := net.Listen(t, nil, erpc.WithFailureTimeout(300*time.Millisecond))
	c, err := ep.NewClient("fleettest:///"+name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitReplicas waits until the client reports want replicas in state st.
func waitReplicas(t *testing.T, c *erpc.Client, st erpc.ReplicaState, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := 0
		for _, r := range c.Replicas() {
			if r.State == st {
				n++
			}
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d replicas %v, want %d: %+v", n, st, want, c.Replicas())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// replicaState is addr's state in c, or -1 if c does not know it.
func replicaState(c *erpc.Client, addr string) erpc.ReplicaState {
	for _, r := range c.Replicas() {
		if r.Addr == addr {
			return r.State
		}
	}
	return -1
}
