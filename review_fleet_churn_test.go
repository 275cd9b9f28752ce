package erpc_test

import (
	"context"
	"encoding/binary"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
)

// TestReviewChurnAtMostOnce: a seeded churn over a lossy, duplicating,
// reordering in-memory network: servers are killed (Close), drained
// (Shutdown), added, and flapped in and out of the resolver's set, while
// sessions age out every ~80 ms and eight callers make non-idempotent
// calls, each with its own ID. Afterwards: no ID ran twice (promise 1),
// a call that succeeded ran exactly once, and a call whose error says
// NotExecuted never ran. Calls failed only by drains would break the
// drain promise; those are counted apart.
func TestReviewChurnAtMostOnce(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run("", func(t *testing.T) { revChurn(t, seed) })
	}
}

func revChurn(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 31))
	mn := &memNet{memnet.NewNetwork(seed, memnet.LinkConfig{Loss: 0.01, Dup: 0.01, Reorder: 0.01, ReorderDelay: 2 * time.Millisecond})}
	var runs sync.Map // id -> *atomic.Int64
	runsOf := func(id uint64) int64 {
		if v, ok := runs.Load(id); ok {
			return v.(*atomic.Int64).Load()
		}
		return 0
	}
	type server struct {
		ep   *erpc.Endpoint
		addr string
	}
	var mu sync.Mutex
	var live []*server
	start := func() *server {
		srv := erpc.NewServer()
		srv.Handle("Once", func(ctx context.Context, req []byte) ([]byte, error) {
			id := binary.LittleEndian.Uint64(req)
			v, _ := runs.LoadOrStore(id, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
			time.Sleep(time.Duration(req[8]) * 10 * time.Microsecond)
			return req, nil
		}, erpc.Background())
		ep := mn.Listen(t, srv, erpc.WithLogger(slog.New(slog.DiscardHandler)))
		return &server{ep: ep, addr: ep.Addr().String()}
	}
	name := newFleetName()
	publish := func(skip *server) {
		var addrs []string
		for _, s := range live {
			if s != skip {
				addrs = append(addrs, s.addr)
			}
		}
		testResolver.set(name, addrs...)
	}
	for range 4 {
		live = append(live, start())
	}
	publish(nil)
	cep := mn.Listen(t, nil, erpc.WithFailureTimeout(300*time.Millisecond), erpc.WithLogger(slog.New(slog.DiscardHandler)))
	c, err := cep.NewClient("fleettest:///"+name, erpc.WithMaxSessionAge(80*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitReplicas(t, c, erpc.ReplicaReady, 4)

	type outcome struct {
		id  uint64
		err error
	}
	var omu sync.Mutex
	var outs []outcome
	var nextID atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			req := make([]byte, 9)
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := nextID.Add(1)
				binary.LittleEndian.PutUint64(req, id)
				req[8] = byte(r.IntN(50))
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := c.Call(ctx, "Once", req, nil)
				cancel()
				omu.Lock()
				outs = append(outs, outcome{id, err})
				omu.Unlock()
			}
		}()
	}
	kills, drains, flaps := 0, 0, 0
	var shutdowns sync.WaitGroup
	for range 20 {
		time.Sleep(time.Duration(50+rnd.IntN(100)) * time.Millisecond)
		mu.Lock()
		switch k := rnd.IntN(4); {
		case k == 0 && len(live) > 2: // kill
			i := rnd.IntN(len(live))
			victim := live[i]
			live = append(live[:i:i], live[i+1:]...)
			victim.ep.Close()
			publish(nil)
			kills++
		case k == 1 && len(live) > 2: // drain, then drop from the set
			i := rnd.IntN(len(live))
			victim := live[i]
			live = append(live[:i:i], live[i+1:]...)
			shutdowns.Add(1)
			go func() {
				defer shutdowns.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				victim.ep.Shutdown(ctx)
			}()
			time.AfterFunc(20*time.Millisecond, func() {
				mu.Lock()
				publish(nil)
				mu.Unlock()
			})
			drains++
		case k == 2: // flap one out and back
			s := live[rnd.IntN(len(live))]
			publish(s)
			mu.Unlock()
			time.Sleep(time.Duration(rnd.IntN(20)) * time.Millisecond)
			mu.Lock()
			publish(nil)
			flaps++
		default: // add one
			live = append(live, start())
			publish(nil)
		}
		mu.Unlock()
	}
	close(stop)
	wg.Wait()
	shutdowns.Wait()
	c.Close()
	mu.Lock()
	for _, s := range live {
		s.ep.Close()
	}
	mu.Unlock()

	twice, okNotOnce, notExecRan, failed := 0, 0, 0, 0
	var example string
	for _, o := range outs {
		n := runsOf(o.id)
		switch {
		case n > 1:
			twice++
			if example == "" {
				example = "id ran twice"
			}
		case o.err == nil && n != 1:
			okNotOnce++
		case o.err != nil && erpc.NotExecuted(o.err) && n != 0:
			notExecRan++
			if example == "" {
				example = o.err.Error()
			}
		}
		if o.err != nil {
			failed++
		}
	}
	t.Logf("seed %d: %d calls, %d failed; %d kills, %d drains, %d flaps", seed, len(outs), failed, kills, drains, flaps)
	if kills+drains+flaps == 0 || len(outs) == 0 {
		t.Fatal("no churn or no calls")
	}
	if twice > 0 || okNotOnce > 0 || notExecRan > 0 {
		t.Fatalf("seed %d: %d calls ran twice, %d successes did not run exactly once, %d NotExecuted failures had run (e.g. %s)",
			seed, twice, okNotOnce, notExecRan, example)
	}
}

// TestReviewRollingDeployFailsNoCall: a rolling deploy, seeded: a new
// server comes up and joins the set, then an old one shuts down while it
// serves calls (handlers of 0-2 ms), and leaves the resolver's set a
// random 0-30 ms before or after its Shutdown begins. README: "A rolling
// deploy fails no call"; Shutdown "fails no call of a fleet Client".
func TestReviewRollingDeployFailsNoCall(t *testing.T) {
	for _, seed := range []uint64{7, 8} {
		t.Run("", func(t *testing.T) { revRolling(t, seed) })
	}
}

func revRolling(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 17))
	mn := newMemNet()
	var ran atomic.Int64
	start := func() *erpc.Endpoint {
		srv := erpc.NewServer()
		srv.Handle("Work", func(ctx context.Context, req []byte) ([]byte, error) {
			ran.Add(1)
			time.Sleep(time.Duration(req[0]) * 10 * time.Microsecond)
			return req, nil
		}, erpc.Background())
		return mn.Listen(t, srv)
	}
	name := newFleetName()
	var live []*erpc.Endpoint
	set := func(skip *erpc.Endpoint) {
		var addrs []string
		for _, ep := range live {
			if ep != skip {
				addrs = append(addrs, ep.Addr().String())
			}
		}
		testResolver.set(name, addrs...)
	}
	for range 3 {
		live = append(live, start())
	}
	set(nil)
	c := newFleetClient(t, mn, name)
	waitReplicas(t, c, erpc.ReplicaReady, 3)
	var calls, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Call(context.Background(), "Work", []byte{byte(r.IntN(200))}, nil); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				calls.Add(1)
			}
		}()
	}
	var shut sync.WaitGroup
	var shutErrs atomic.Int64
	for range 6 {
		time.Sleep(100 * time.Millisecond)
		fresh := start()
		live = append(live, fresh)
		set(nil)
		waitReplicas(t, c, erpc.ReplicaReady, len(live))
		old := live[0]
		gap := time.Duration(rnd.IntN(30)) * time.Millisecond
		removeFirst := rnd.IntN(2) == 0
		if removeFirst {
			set(old)
			time.Sleep(gap)
		}
		shut.Add(1)
		go func() {
			defer shut.Done()
			if err := old.Shutdown(context.Background()); err != nil {
				shutErrs.Add(1)
			}
		}()
		if !removeFirst {
			time.Sleep(gap)
		}
		live = live[1:]
		set(nil)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	shut.Wait()
	t.Logf("seed %d: %d calls, %d failed, %d handler runs", seed, calls.Load(), failed.Load(), ran.Load())
	if calls.Load() == 0 {
		t.Fatal("no load")
	}
	if failed.Load() != 0 || shutErrs.Load() != 0 {
		t.Fatalf("seed %d: a rolling deploy failed %d of %d calls (first: %v); %d Shutdowns cut calls",
			seed, failed.Load(), calls.Load(), firstErr.Load(), shutErrs.Load())
	}
}
