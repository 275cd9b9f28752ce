package erpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
)

// TestPromisesFullStack attacks every delivery promise at once (see
// PROMISES.md): clients behind a NAT that rebinds their addresses, a
// server restarted at random moments, a lossy network that duplicates and
// reorders, calls cancelled at random, calls over the server's size
// limit, background handlers slower than the rebinding period, a server
// admitting by SLO, handlers answering from racing goroutines and handles
// kept and read after the answer. Executions are counted per request id
// across every server incarnation, and each call's outcome is checked
// against them. Each seed runs about a second; ERPC_PROMISE_SEEDS sets how
// many (4 by default).
func TestPromisesFullStack(t *testing.T) {
	checkLeaks(t)
	seeds := 4
	if v, err := strconv.Atoi(os.Getenv("ERPC_PROMISE_SEEDS")); err == nil && v > 0 {
		seeds = v
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runPromises(t, seed) })
	}
}

// Request layout: id (8 bytes), then filler up to the call's size.
const (
	promiseServerMax = 16 << 10 // the servers' message limit
	promiseClients   = 3
	promiseCallers   = 4 // goroutines per client
)

// ledger counts what the servers did, across incarnations.
type ledger struct {
	mu       sync.Mutex
	runs     map[uint64]int
	winner   map[uint64]byte // Race: which goroutine's answer counted
	lost     atomic.Int64    // Race: answers refused because another came first
	spent    atomic.Int64    // Keep: reads of a handle after its answer that saw a spent handle
	keptRead atomic.Int64    // Keep: reads of a handle after its answer
}

func (l *ledger) ran(req []byte) uint64 {
	id := binary.LittleEndian.Uint64(req)
	l.mu.Lock()
	l.runs[id]++
	l.mu.Unlock()
	return id
}

func (l *ledger) count(id uint64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[id]
}

// promiseServer is one incarnation of the server, with the handlers every
// incarnation has.
func promiseServer(t *testing.T, l *ledger, rng *rand.Rand) *erpc.Server {
	srv := erpc.NewServer()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(srv.Handle("Fast", func(_ context.Context, req []byte) ([]byte, error) {
		l.ran(req)
		return req, nil
	}))
	slow := time.Duration(rng.IntN(3000)) * time.Microsecond
	must(srv.Handle("Slow", func(_ context.Context, req []byte) ([]byte, error) {
		l.ran(req)
		time.Sleep(slow)
		return req, nil
	}, erpc.Background()))
	must(srv.HandleRaw("Race", func(r erpc.Request) {
		id := l.ran(r.Data())
		n := len(r.Data())
		var wg sync.WaitGroup
		for g := range byte(2 + id%3) { // the handler runs on many goroutines: no shared rng
			wg.Go(func() {
				var out []byte
				if g%2 == 0 {
					out = r.ResponseBuffer(n) // the endpoint's memory: no copy
				} else {
					out = make([]byte, n) // the goroutine's own: copied
				}
				if len(out) < 9 {
					return
				}
				binary.LittleEndian.PutUint64(out, id)
				for i := 8; i < len(out); i++ {
					out[i] = g
				}
				if r.Respond(out) == nil {
					l.mu.Lock()
					l.winner[id] = g
					l.mu.Unlock()
				} else {
					l.lost.Add(1)
				}
			})
		}
		wg.Wait()
	}, erpc.Background()))
	must(srv.HandleRaw("Keep", func(r erpc.Request) {
		l.ran(r.Data())
		r.Respond(r.Data())
		go func() {
			for range 20 {
				l.keptRead.Add(1)
				_, _ = r.Deadline()
				_ = r.Peer()
				_ = r.Metadata()
				_ = r.Data()
				_ = r.Context().Err()
				if r.Method() == "" {
					l.spent.Add(1)
				}
				time.Sleep(50 * time.Microsecond)
			}
		}()
	}, erpc.Background()))
	return srv
}

// promiseOutcome is what a call ended with.
type promiseOutcome struct {
	id     uint64
	method string
	size   int
	err    error
	resp   []byte
}

func runPromises(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 27))
	net := memnet.NewNetwork(seed, memnet.LinkConfig{Loss: 0.02, Dup: 0.03, Reorder: 0.05,
		ReorderDelay: 2 * time.Millisecond, Delay: 20 * time.Microsecond})
	gw := newNAT()
	l := &ledger{runs: map[uint64]int{}, winner: map[uint64]byte{}}
	addr := fmt.Sprintf("10.88.%d.1:1", seed%250)
	withSLO := seed%2 == 1
	slo := time.Duration(200+rng.IntN(3000)) * time.Microsecond

	var srvMu sync.Mutex
	var srvEP *erpc.Endpoint
	incarnations := 0
	start := func() {
		tr, err := net.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		opts := []erpc.Option{erpc.WithTransport(&natTransport{Transport: tr, nat: gw}),
			erpc.WithMaxMessageSize(promiseServerMax)}
		if withSLO {
			opts = append(opts, erpc.WithWorkers(2), erpc.WithSLO(slo, 0))
		}
		ep, err := promiseServer(t, l, rand.New(rand.NewPCG(seed, uint64(incarnations)))).Listen("", opts...)
		if err != nil {
			t.Fatal(err)
		}
		srvMu.Lock()
		srvEP, incarnations = ep, incarnations+1
		srvMu.Unlock()
	}
	start()
	defer func() {
		srvMu.Lock()
		srvEP.Close()
		srvMu.Unlock()
	}()

	// The chaos: rebinding and restarts until stop closes.
	stop := make(chan struct{})
	var chaos sync.WaitGroup
	chaos.Go(func() {
		crng := rand.New(rand.NewPCG(seed, 99))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(20+crng.IntN(120)) * time.Millisecond):
			}
			switch crng.IntN(4) {
			case 0: // restart
				srvMu.Lock()
				srvEP.Close()
				srvMu.Unlock()
				time.Sleep(time.Duration(crng.IntN(20)) * time.Millisecond)
				start()
			default:
				gw.rebindAll(crng.IntN(3) > 0)
			}
		}
	})

	var ids atomic.Uint64
	var mu sync.Mutex
	var outcomes []promiseOutcome
	var callers sync.WaitGroup
	deadline := time.Now().Add(time.Second)
	sessions := make([]*erpc.Session, promiseClients)
	for c := range promiseClients {
		tr, err := net.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		cli := listenT(t, nil, "", erpc.WithTransport(tr))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := cli.Dial(ctx, addr)
		cancel()
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer s.Close()
		sessions[c] = s
		for g := range promiseCallers {
			crng := rand.New(rand.NewPCG(seed, uint64(c*100+g)))
			callers.Go(func() {
				for time.Now().Before(deadline) {
					o := promiseCall(s, crng, ids.Add(1)+seed<<40)
					mu.Lock()
					outcomes = append(outcomes, o)
					mu.Unlock()
				}
			})
		}
	}
	callers.Wait()
	close(stop)
	chaos.Wait()

	// Liveness once the chaos ends: every client calls through, and a
	// background call is admitted by an idle server whatever its SLO.
	for c, s := range sessions {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		for attempt := 0; attempt < 20; attempt++ {
			req := binary.LittleEndian.AppendUint64(nil, ids.Add(1)+seed<<40)
			if _, err = s.Call(ctx, "Slow", req, nil); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		if err != nil {
			t.Errorf("client %d cannot call once the chaos ended: %v", c, err)
		}
	}
	time.Sleep(20 * time.Millisecond) // late copies land, kept handles are read

	checkPromiseOutcomes(t, l, outcomes)
	rebinds, _ := gw.counts()
	st := net.Stats()
	counts := map[erpc.Code]int{}
	neverRan := 0
	for _, o := range outcomes {
		counts[erpc.CodeOf(o.err)]++
		if erpc.NotExecuted(o.err) {
			neverRan++
		}
	}
	t.Logf("seed %d: %d calls %v, %d proven never run; %d server incarnations, %d rebinds, SLO %v (%v); net %+v; race losers %d, kept reads %d (spent %d)",
		seed, len(outcomes), counts, neverRan, incarnations, rebinds, withSLO, slo, st, l.lost.Load(), l.keptRead.Load(), l.spent.Load())
	// Every attack happened.
	switch {
	case incarnations < 2:
		t.Errorf("the server never restarted")
	case rebinds == 0:
		t.Errorf("the NAT never rebound")
	case st.Lost == 0 || st.Duplicated == 0 || st.Reordered == 0:
		t.Errorf("the network neither lost, duplicated nor reordered: %+v", st)
	case counts[erpc.OK] == 0:
		t.Errorf("no call succeeded")
	case neverRan == 0:
		t.Errorf("no failure was proven never run")
	case counts[erpc.InvalidArgument] == 0:
		t.Errorf("no oversize call was refused")
	case counts[erpc.DeadlineExceeded] == 0:
		t.Errorf("no call was cut by its deadline")
	case l.lost.Load() == 0:
		t.Errorf("no racing answer lost the race")
	case l.spent.Load() == 0:
		t.Errorf("no kept handle was read after it was spent")
	}
}

// promiseCall makes one call of a random kind and returns its outcome.
func promiseCall(s *erpc.Session, rng *rand.Rand, id uint64) promiseOutcome {
	methods := [...]string{"Fast", "Slow", "Race", "Keep"}
	o := promiseOutcome{id: id, method: methods[rng.IntN(len(methods))], size: 8 + rng.IntN(64)}
	switch rng.IntN(10) {
	case 0:
		o.size = promiseServerMax + 1 + rng.IntN(promiseServerMax)
	case 1:
		o.size = 2000 + rng.IntN(promiseServerMax-2000) // several packets
	}
	req := make([]byte, o.size)
	binary.LittleEndian.PutUint64(req, id)
	for i := 8; i < len(req); i++ {
		req[i] = byte(id) + byte(i)
	}
	timeout := 2 * time.Second
	if rng.IntN(8) == 0 {
		timeout = time.Duration(200+rng.IntN(3000)) * time.Microsecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	o.resp, o.err = s.Call(ctx, o.method, req, nil)
	if o.err == nil && o.method != "Race" && !bytes.Equal(o.resp, req) {
		o.err = fmt.Errorf("response of %d bytes differs from the request", len(o.resp))
	}
	return o
}

// checkPromiseOutcomes holds every call's outcome against the executions
// the servers counted.
func checkPromiseOutcomes(t *testing.T, l *ledger, outcomes []promiseOutcome) {
	t.Helper()
	bad := 0
	report := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, o := range outcomes {
		runs := l.count(o.id)
		if runs > 1 {
			report("request %d (%s) ran %d times", o.id, o.method, runs)
		}
		code := erpc.CodeOf(o.err)
		switch {
		case o.size > promiseServerMax:
			// Refused as too large, or cut before the session (re)connected
			// and told the client the server's limit; never run either way.
			if runs != 0 || code != erpc.InvalidArgument && code != erpc.DeadlineExceeded && code != erpc.Unavailable {
				report("oversize call %d: %v, ran %d times; want InvalidArgument, never run", o.id, o.err, runs)
			}
		case o.err == nil:
			if runs != 1 {
				report("call %d (%s) succeeded but ran %d times", o.id, o.method, runs)
			}
			if o.method == "Race" {
				checkRaceWinner(l, o, report)
			}
		case code == erpc.ResourceExhausted || code == erpc.InvalidArgument:
			if runs != 0 {
				report("call %d (%s) was refused (%v) but ran %d times", o.id, o.method, o.err, runs)
			}
		case code == erpc.Unknown || code == erpc.Internal:
			report("call %d (%s): %v", o.id, o.method, o.err)
		}
		if erpc.NotExecuted(o.err) && runs != 0 {
			report("call %d (%s) failed as never run (%v) but ran %d times", o.id, o.method, o.err, runs)
		}
	}
	if bad > 10 {
		t.Errorf("... %d violations in all", bad)
	}
}

// checkRaceWinner: the answer that counted arrives byte-exact.
func checkRaceWinner(l *ledger, o promiseOutcome, report func(string, ...any)) {
	l.mu.Lock()
	g, ok := l.winner[o.id]
	l.mu.Unlock()
	if !ok {
		report("race call %d succeeded but no goroutine's answer counted", o.id)
		return
	}
	want := make([]byte, o.size)
	binary.LittleEndian.PutUint64(want, o.id)
	for i := 8; i < len(want); i++ {
		want[i] = g
	}
	if !bytes.Equal(o.resp, want) {
		report("race call %d: the client got other bytes than the winning answer (goroutine %d)", o.id, g)
	}
}
