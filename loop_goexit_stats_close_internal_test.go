package erpc

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport/memnet"
)

// TestGoexitInStatsSessionEvent: StatsHandler.SessionEvent calls
// runtime.Goexit on both ends, for every session up and down: the dial
// completes, calls are served, closing the session and both endpoints
// returns, and each Goexit is logged once. Before the guard the client's
// loop died as its session came up, and the dial never completed.
func TestGoexitInStatsSessionEvent(t *testing.T) {
	st := newExitStats(1<<30, func(c statsCall) bool { return c.cb == "SessionEvent" })
	srv := NewServer()
	if err := srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
		t.Fatal(err)
	}
	p := listenStatsPair(t, srv, []Option{WithStatsHandler(st)}, []Option{WithStatsHandler(st)})
	dialed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		p.sess, err = p.cep.Dial(ctx, p.sep.Target())
		dialed <- err
	}()
	select {
	case err := <-dialed:
		if err != nil {
			t.Fatalf("dial: %v (%d Goexits)", err, st.exits.Load())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the dial has not completed after 15 s (%d Goexits)", st.exits.Load())
	}
	if _, err := p.callWithin(t, "Echo", []byte("x")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for st.exits.Load() < 2 && time.Now().Before(deadline) { // the client's up, the server's accepted
		time.Sleep(time.Millisecond)
	}
	if got := st.exits.Load(); got < 2 {
		t.Fatalf("%d Goexits after the session came up on both ends, want 2", got)
	}
	checkLoopAlive(t, p.cep, st)
	checkLoopAlive(t, p.sep, st)
	closed := make(chan struct{})
	go func() { p.sess.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Session.Close has not returned after 10 s")
	}
	closeWithin(t, p.cep, 10*time.Second)
	closeWithin(t, p.sep, 10*time.Second)
	if got := st.exits.Load(); got < 3 {
		t.Fatalf("%d Goexits, want at least 3 (the client session's up and down, the server's up)", got)
	}
	t.Logf("%d Goexits in SessionEvent", st.exits.Load())
	checkGoexitsLogged(t, p.logs, "SessionEvent", st.exits.Load())
}

// TestGoexitInStatsCallEndAtClose: a client's StatsHandler.CallEnd calls
// runtime.Goexit for each Session.Go call that its endpoint's Close fails
// (pending on a link that is down): the stop finishes on fresh
// goroutines, every continuation runs once, and Close returns.
func TestGoexitInStatsCallEndAtClose(t *testing.T) {
	st := newExitStats(1<<30, func(c statsCall) bool { return c.cb == "CallEnd" && !c.info.Server })
	srv := NewServer()
	if err := srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
		t.Fatal(err)
	}
	p := newStatsPair(t, srv, nil, []Option{WithStatsHandler(st)})
	p.net.SetDefault(memnet.LinkConfig{Down: true}) // calls stay pending
	const calls = 10
	var ran atomic.Int64
	conts := make(chan error, calls)
	for range calls {
		p.sess.Go("Echo", []byte("x"), nil, func(_ []byte, err error) {
			ran.Add(1)
			conts <- err
		})
	}
	time.Sleep(20 * time.Millisecond)
	closeWithin(t, p.cep, 10*time.Second)
	for i := range calls {
		select {
		case err := <-conts:
			if CodeOf(err) != Unavailable {
				t.Errorf("continuation %d: %v, want Unavailable", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d continuations ran within 10 s of Close", i, calls)
		}
	}
	time.Sleep(10 * time.Millisecond)
	if ran.Load() != calls {
		t.Fatalf("%d continuations ran, want %d", ran.Load(), calls)
	}
	if st.exits.Load() != calls {
		t.Fatalf("the stats handler called Goexit %d times, want %d", st.exits.Load(), calls)
	}
	checkGoexitsLogged(t, p.logs, "CallEnd", calls)
	closeWithin(t, p.sep, 10*time.Second)
}

// TestGoexitInStatsCallEndOfQueuedCallAtStop: calls still in the command
// queue when the loop stops are failed by the stop itself, on the loop
// (finishStopped), where StatsHandler.CallEnd calls runtime.Goexit. A
// Post function that posts itself and starts a Session.Go call each time
// keeps calls queued up to the stop. Every continuation runs once, and
// Close returns; the Goexits from that path are counted (the test fails
// if none came from it).
func TestGoexitInStatsCallEndOfQueuedCallAtStop(t *testing.T) {
	st := newExitStats(1<<30, func(c statsCall) bool {
		return c.cb == "CallEnd" && !c.info.Server && calledFrom("erpc.(*Endpoint).finishStopped", "erpc.(*Endpoint).stop")
	})
	const rounds = 5
	for round := range rounds {
		srv := NewServer()
		if err := srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
			t.Fatal(err)
		}
		p := newStatsPair(t, srv, nil, []Option{WithStatsHandler(st)})
		var started, ran atomic.Int64
		var chain func()
		chain = func() {
			for range 3 { // several queued at the stop: the rest of its batch after a Goexit
				started.Add(1)
				p.sess.Go("Echo", []byte("x"), nil, func([]byte, error) { ran.Add(1) })
			}
			_ = p.cep.Post(chain) // fails once the loop has stopped: the chain ends
		}
		if err := p.cep.Post(chain); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		before := st.exits.Load()
		closeWithin(t, p.cep, 10*time.Second)
		deadline := time.Now().Add(10 * time.Second)
		for ran.Load() < started.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if ran.Load() != started.Load() {
			t.Fatalf("round %d: %d of %d continuations ran within 10 s of Close", round, ran.Load(), started.Load())
		}
		t.Logf("round %d: %d calls, %d Goexits in the stop's CallEnd", round, started.Load(), st.exits.Load()-before)
		closeWithin(t, p.sep, 10*time.Second)
		checkGoexitsLogged(t, p.logs, "CallEnd", st.exits.Load()-before)
	}
	if st.exits.Load() == 0 {
		t.Fatalf("no CallEnd ran in the stop's own settling of queued calls in %d rounds: the test missed its path", rounds)
	}
}

// calledFrom reports whether every function named is on the calling
// goroutine's stack.
func calledFrom(funcs ...string) bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	found := 0
	seen := map[string]bool{}
	for {
		f, more := frames.Next()
		for _, name := range funcs {
			if !seen[name] && strings.HasSuffix(f.Function, name) {
				seen[name] = true
				found++
			}
		}
		if !more {
			break
		}
	}
	return found == len(funcs)
}
