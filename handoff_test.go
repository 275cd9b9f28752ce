package erpc_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// spin works for d without blocking, as a handler doing CPU work does.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// serverEnds counts, by method, the requests the server answered (its
// StatsHandler's CallEnd): one per request, or an answer went twice.
type serverEnds struct {
	mu   sync.Mutex
	ends map[string]int
}

func (s *serverEnds) CallBegin(ctx context.Context, _ erpc.CallInfo) context.Context { return ctx }
func (s *serverEnds) SessionEvent(erpc.SessionEvent)                                 {}
func (s *serverEnds) CallEnd(_ context.Context, info erpc.CallInfo, _ erpc.CallEnd) {
	if !info.Server {
		return
	}
	s.mu.Lock()
	s.ends[info.Method]++
	s.mu.Unlock()
}

// waitHandedOff blocks until ep's loop has been handed off more than
// before times (a handler calls it to be sure it runs off the loop), or
// 5 s pass; it reports which.
func waitHandedOff(ep *erpc.Endpoint, before int64) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if erpc.Handoffs(ep) > before {
			return true
		}
	}
	return false
}

// The handler shapes TestHandoffRacesAnswer mixes, chosen per request.
const (
	shapeRespondThenReturn = iota // spin, answer, return
	shapeReturnAfterAnswer        // answer, then spin: handed off with its answer waiting
	shapeGoroutineAnswers         // a goroutine answers while the handler spins
	shapePanic                    // spin, then panic before any answer
	shapeStats                    // spin between Stats calls (loop state read by user code), then answer
	shapes
)

// TestHandoffRacesAnswer: with a handoff threshold of 2 us, thousands of
// inline handlers whose run lasts around it (0-60 us of work), so that
// the watchdog's compare-and-swap races the handler's return: each
// request is answered exactly once (the server reports one end per
// request, the client gets the answer its handler's shape calls for),
// nothing is logged as dropped, the server holds no request at the end,
// and no goroutine is left. Both outcomes of the race must happen: some
// runs handed off and some not. The handlers also answer from another
// goroutine during the handoff, panic, and read Stats (loop state read
// directly while the loop is pinned).
func TestHandoffRacesAnswer(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		// The loop runs these handlers without blocking: with one P the
		// watchdog (or the racer) runs only between them.
		t.Skip("needs two Ps: the race is between two running goroutines")
	}
	checkLeaks(t)
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	ends := &serverEnds{ends: map[string]int{}}
	var self *erpc.Endpoint
	srv := erpc.NewServer()
	srv.HandleRaw("Raw", func(r erpc.Request) {
		d := r.Data()
		work := time.Duration(d[1]) * time.Microsecond
		switch d[0] {
		case shapeRespondThenReturn:
			spin(work)
			r.Respond(d)
		case shapeReturnAfterAnswer:
			r.Respond(d)
			spin(work)
		case shapeGoroutineAnswers:
			go func() {
				spin(work / 2)
				r.Respond(r.Data())
			}()
			spin(work)
		case shapePanic:
			spin(work)
			panic("shape panic")
		case shapeStats:
			for range 3 {
				_ = self.Stats()
				spin(work / 3)
			}
			r.Respond(d)
		}
	})
	srv.Handle("Plain", func(_ context.Context, req []byte) ([]byte, error) {
		spin(time.Duration(req[1]) * time.Microsecond)
		return req, nil
	})
	n := newMemNet()
	ep := n.Listen(t, srv, erpc.WithHandoff(2*time.Microsecond), erpc.WithStatsHandler(ends), erpc.WithLogger(logger))
	self = ep
	const clients, perClient = 4, 400
	var byShape [shapes + 1]atomic.Int64
	var wg sync.WaitGroup
	for c := range clients {
		s := dialT(t, n, n.Listen(t, nil), ep)
		rng := rand.New(rand.NewPCG(uint64(c), 29))
		wg.Go(func() {
			for range perClient {
				shape, method := rng.IntN(shapes+1), "Raw"
				if shape == shapes {
					method = "Plain"
				}
				req := []byte{byte(shape), byte(rng.IntN(60)), byte(rng.Uint32())}
				resp, err := call(t, s, method, req)
				switch {
				case shape == shapePanic:
					if erpc.CodeOf(err) != erpc.Internal {
						t.Errorf("a handler that panicked: %v, want Internal", err)
					}
				case err != nil || !bytes.Equal(resp, req):
					t.Errorf("shape %d: %x, %v; want %x", shape, resp, err, req)
				}
				byShape[shape].Add(1)
			}
		})
	}
	wg.Wait()
	total := clients * perClient
	handoffs := erpc.Handoffs(ep)
	t.Logf("%d calls, %d handoffs", total, handoffs)
	if handoffs == 0 || handoffs >= int64(total) {
		t.Fatalf("%d handoffs in %d calls: the race needs both outcomes", handoffs, total)
	}
	ends.mu.Lock()
	answered := ends.ends["Raw"] + ends.ends["Plain"]
	ends.mu.Unlock()
	if answered != total {
		t.Fatalf("the server answered %d times for %d requests", answered, total)
	}
	if st := ep.Stats(); st.HeldRequests != 0 {
		t.Fatalf("the server still holds %d requests", st.HeldRequests)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(logs.String(), "dropping response") {
		t.Fatalf("a response was dropped: %s", logs.String())
	}
	if p := strings.Count(logs.String(), "shape panic"); p < int(byShape[shapePanic].Load()) {
		t.Fatalf("%d panics logged for %d", p, byShape[shapePanic].Load())
	}
}

// TestHandedOffHandlerPanics: a handler that panics after it lost the
// loop answers Internal, is logged, and the endpoint goes on serving.
func TestHandedOffHandlerPanics(t *testing.T) {
	checkLeaks(t)
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	var ep *erpc.Endpoint
	var handedOff atomic.Bool
	srv := erpc.NewServer()
	srv.Handle("Panic", func(context.Context, []byte) ([]byte, error) {
		handedOff.Store(waitHandedOff(ep, erpc.Handoffs(ep)))
		panic("after the handoff")
	})
	srv.Handle("Echo", echoHandler)
	n := newMemNet()
	ep = n.Listen(t, srv, erpc.WithLogger(logger))
	s := dialT(t, n, n.Listen(t, nil), ep)
	_, err := call(t, s, "Panic", nil)
	if !handedOff.Load() {
		t.Fatal("the handler was never handed off")
	}
	if erpc.CodeOf(err) != erpc.Internal {
		t.Fatalf("a handed-off handler that panicked: %v, want Internal", err)
	}
	if resp, err := call(t, s, "Echo", []byte("after")); err != nil || string(resp) != "after" {
		t.Fatalf("echo after the panic: %q, %v", resp, err)
	}
	// The handler's goroutine answers first and logs after: the answer
	// may arrive before the log line is written.
	logged := func() bool {
		logMu.Lock()
		defer logMu.Unlock()
		return strings.Contains(logs.String(), "after the handoff")
	}
	for end := time.Now().Add(5 * time.Second); !logged(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			logMu.Lock()
			defer logMu.Unlock()
			t.Fatalf("the panic was not logged: %q", logs.String())
		}
	}
}

// TestHandedOffHandlerCalls: a blocking Session.Call is refused on the
// loop (it could never complete there); a handler that has lost the loop
// is not on it any more, and its blocking call goes through, over a
// session of its own endpoint, whose loop the new owner runs.
func TestHandedOffHandlerCalls(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	backend := n.Listen(t, serverWith(t, "Echo", echoHandler))
	var ep *erpc.Endpoint
	var self *erpc.Session
	var handedOff atomic.Bool
	srv := erpc.NewServer()
	srv.Handle("Nested", func(ctx context.Context, req []byte) ([]byte, error) {
		handedOff.Store(waitHandedOff(ep, erpc.Handoffs(ep)))
		return self.Call(ctx, "Echo", req, nil)
	})
	ep = n.Listen(t, srv)
	self = dialT(t, n, ep, backend)
	s := dialT(t, n, n.Listen(t, nil), ep)
	for i := range 20 {
		req := []byte(fmt.Sprint("nested ", i))
		resp, err := call(t, s, "Nested", req)
		if !handedOff.Load() {
			t.Fatal("the handler was never handed off")
		}
		if err != nil || !bytes.Equal(resp, req) {
			t.Fatalf("a handed-off handler's blocking call: %q, %v", resp, err)
		}
	}
}

// TestInlineHandlerCallHandsOff: an inline handler that makes a blocking
// Call at once (before the watchdog could hand it off) hands the loop off
// itself and its call goes through; an OnLoop handler, which cannot leave
// the loop, is refused with FailedPrecondition.
func TestInlineHandlerCallHandsOff(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	backend := n.Listen(t, serverWith(t, "Echo", echoHandler))
	var self *erpc.Session
	srv := erpc.NewServer()
	srv.Handle("Nested", func(ctx context.Context, req []byte) ([]byte, error) {
		return self.Call(ctx, "Echo", req, nil)
	})
	srv.Handle("Pinned", func(ctx context.Context, req []byte) ([]byte, error) {
		return self.Call(ctx, "Echo", req, nil)
	}, erpc.OnLoop())
	ep := n.Listen(t, srv, erpc.WithHandoff(time.Hour)) // the watchdog never hands off: only the call does
	self = dialT(t, n, ep, backend)
	s := dialT(t, n, n.Listen(t, nil), ep)
	const calls = 50
	for i := range calls {
		req := []byte(fmt.Sprint("nested ", i))
		if resp, err := call(t, s, "Nested", req); err != nil || !bytes.Equal(resp, req) {
			t.Fatalf("an inline handler's blocking call: %q, %v", resp, err)
		}
	}
	if h := erpc.Handoffs(ep); h != calls {
		t.Fatalf("%d handoffs for %d inline handlers that called, want one each", h, calls)
	}
	if _, err := call(t, s, "Pinned", []byte("x")); erpc.CodeOf(err) != erpc.FailedPrecondition {
		t.Fatalf("an OnLoop handler's blocking call: %v, want FailedPrecondition", err)
	}
}

// TestShutdownWaitsForHandedOffHandler: Shutdown waits for a handler that
// lost the loop as it waits for a Background one: it returns only after
// the handler answered, and the caller gets the answer.
func TestShutdownWaitsForHandedOffHandler(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	var answered atomic.Bool
	var ep *erpc.Endpoint
	var handedOff atomic.Bool
	srv := erpc.NewServer()
	srv.Handle("Block", func(_ context.Context, req []byte) ([]byte, error) {
		handedOff.Store(waitHandedOff(ep, erpc.Handoffs(ep)))
		<-release
		answered.Store(true)
		return req, nil
	})
	n := newMemNet()
	ep = n.Listen(t, srv)
	s := dialT(t, n, n.Listen(t, nil), ep)
	callDone := make(chan error, 1)
	go func() {
		_, err := call(t, s, "Block", []byte("x"))
		callDone <- err
	}()
	for !handedOff.Load() {
		time.Sleep(time.Millisecond)
	}
	shutDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutDone <- ep.Shutdown(ctx)
	}()
	select {
	case err := <-shutDone:
		t.Fatalf("Shutdown returned (%v) while a handed-off handler was still running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-shutDone; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if !answered.Load() {
		t.Fatal("Shutdown returned before the handler answered")
	}
	if err := <-callDone; err != nil {
		t.Fatalf("the call Shutdown waited for: %v", err)
	}
}

// TestCloseWaitsForHandedOffHandler: Close abandons a handed-off handler's
// request (its context is canceled) and returns after the handler has,
// as for a Background handler.
func TestCloseWaitsForHandedOffHandler(t *testing.T) {
	checkLeaks(t)
	var returned, canceled atomic.Bool
	var ep *erpc.Endpoint
	started := make(chan struct{})
	srv := erpc.NewServer()
	srv.Handle("Block", func(ctx context.Context, req []byte) ([]byte, error) {
		if waitHandedOff(ep, erpc.Handoffs(ep)) {
			close(started)
		}
		select {
		case <-ctx.Done():
			canceled.Store(true)
		case <-time.After(5 * time.Second):
		}
		time.Sleep(20 * time.Millisecond) // a handler slow to notice
		returned.Store(true)
		return req, nil
	})
	n := newMemNet()
	ep = n.Listen(t, srv)
	s := dialT(t, n, n.Listen(t, nil), ep)
	go call(t, s, "Block", nil)
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was never handed off")
	}
	ep.Close()
	if !canceled.Load() || !returned.Load() {
		t.Fatalf("Close returned before the handed-off handler did (its context canceled: %v, returned: %v)", canceled.Load(), returned.Load())
	}
}

// TestHandoffWithBusyPoll: a busy-polling loop (locked to its thread) is
// handed off again and again: each time a handler blocks, the new owner
// takes its own thread and serves another session's echo calls (counted
// while the handler blocks), and the old goroutine lets its thread go
// when its handler returns.
func TestHandoffWithBusyPoll(t *testing.T) {
	checkLeaks(t)
	const rounds, echoes = 5, 20
	var during atomic.Int64
	var ep *erpc.Endpoint
	srv := erpc.NewServer()
	srv.Handle("Block", func(_ context.Context, req []byte) ([]byte, error) {
		want := during.Load() + echoes
		for deadline := time.Now().Add(5 * time.Second); during.Load() < want && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		return req, nil
	})
	srv.Handle("Echo", echoHandler)
	n := newMemNet()
	ep = n.Listen(t, srv, erpc.WithBusyPoll(time.Millisecond))
	blocked := dialT(t, n, n.Listen(t, nil), ep)
	other := dialT(t, n, n.Listen(t, nil), ep)
	for round := range rounds {
		before := during.Load()
		done := make(chan error, 1)
		go func() {
			_, err := call(t, blocked, "Block", nil)
			done <- err
		}()
		var err error
	loop:
		for {
			select {
			case err = <-done:
				break loop
			default:
			}
			if _, err := call(t, other, "Echo", []byte("e")); err != nil {
				t.Fatalf("round %d: echo beside a blocked handler: %v", round, err)
			}
			during.Add(1)
		}
		if err != nil {
			t.Fatalf("round %d: the blocking call: %v", round, err)
		}
		if d := during.Load() - before; d < echoes {
			t.Fatalf("round %d: %d echo calls while the handler blocked, want %d", round, d, echoes)
		}
	}
	if h := erpc.Handoffs(ep); h < rounds {
		t.Fatalf("%d handoffs in %d rounds", h, rounds)
	}
}
