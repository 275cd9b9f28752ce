package resolver

import (
	"context"
	"math/rand/v2"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
)

// flipLookup answers at once, alternating between two sets, so a resolver
// with a zero period reports an Update on every look-up.
type flipLookup struct{ n atomic.Int64 }

func (l *flipLookup) LookupIPAddr(ctx context.Context, _ string) ([]net.IPAddr, error) {
	if l.n.Add(1)%2 == 0 {
		return []net.IPAddr{{IP: net.IPv4(10, 0, 0, 1)}}, ctx.Err()
	}
	return []net.IPAddr{{IP: net.IPv4(10, 0, 0, 2)}}, ctx.Err()
}

func (l *flipLookup) LookupSRV(context.Context, string, string, string) (string, []*net.SRV, error) {
	return "", nil, nil
}

// closedWatcher fails the test on any call once closed is set.
type closedWatcher struct {
	t      *testing.T
	closed atomic.Bool
	calls  atomic.Int64
}

func (w *closedWatcher) Update(State) { w.check() }
func (w *closedWatcher) Error(error)  { w.check() }
func (w *closedWatcher) check() {
	w.calls.Add(1)
	if w.closed.Load() {
		w.t.Error("a Watcher call after Close returned")
	}
}

// TestCloseStopsCallbacks: resolvers reporting as fast as they can, with
// ResolveNow from another goroutine, are closed at random moments; no
// Watcher call follows Close's return (run under -race).
func TestCloseStopsCallbacks(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1))
	b := NewDNSBuilder(WithDNSLookup(&flipLookup{}), WithDNSPeriod(0), WithDNSMinInterval(0))
	var total int64
	for i := range 200 {
		w := &closedWatcher{t: t}
		var r Resolver
		var err error
		switch i % 3 {
		case 0:
			r, err = Build("static:///a:1,b:2", w)
		case 1:
			r, err = Build("a:1", w)
		default:
			r, err = b.Build(Target{Scheme: "dns", Endpoint: "db.test:7000"}, w)
		}
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
					r.ResolveNow()
					runtime.Gosched()
				}
			}
		}()
		for range rng.IntN(50) {
			runtime.Gosched()
		}
		r.Close()
		w.closed.Store(true)
		r.Close() // twice is fine
		close(stop)
		total += w.calls.Load()
	}
	if total == 0 {
		t.Fatal("no resolver reported anything before Close: the test attacked nothing")
	}
	t.Logf("%d Watcher calls before Close across 200 resolvers", total)
}
