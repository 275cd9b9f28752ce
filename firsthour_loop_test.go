package erpc_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// First-hour traps (issue 14, see firsthour_test.go): blocking on the
// endpoint's own loop, and closing while handlers still run.

// TestBlockingOnOwnLoop: a blocking call made from the endpoint's own loop
// could never complete. From a continuation it fails at once, with or
// without a deadline; an inline handler hands the loop off first and its
// calls go through; Close, Session.Close and Stats called from there work.
func TestBlockingOnOwnLoop(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	backend := n.Listen(t, serverWith(t, "Echo", echoHandler))
	var self *erpc.Session // a session of the serving endpoint itself
	results := make(chan error, 8)
	h := erpc.NewServer()
	h.Handle("CallInline", func(ctx context.Context, req []byte) ([]byte, error) {
		_, err := self.Call(ctx, "Echo", req, nil) // the handler's own context
		results <- err
		ctx2, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err = self.Call(ctx2, "Echo", req, nil) // any other context
		results <- err
		return nil, nil
	})
	h.HandleRaw("ContinuationCalls", func(r erpc.Request) {
		self.Go("Echo", []byte("x"), nil, func([]byte, error) {
			_, err := self.Call(context.Background(), "Echo", []byte("y"), nil)
			results <- err
			r.Respond(nil)
		})
	})
	h.Handle("StatsInline", func(context.Context, []byte) ([]byte, error) {
		_ = self.Endpoint().Stats()
		return nil, nil
	})
	ep := n.Listen(t, h)
	self = dialT(t, n, ep, backend)
	s := dialT(t, n, n.Listen(t, nil), ep)
	start := time.Now()
	if _, err := call(t, s, "CallInline", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-results; err != nil {
			t.Fatalf("blocking call from an inline handler (which hands the loop off first): %v", err)
		}
	}
	if _, err := call(t, s, "ContinuationCalls", nil); err != nil {
		t.Fatal(err)
	}
	if err := <-results; erpc.CodeOf(err) != erpc.FailedPrecondition {
		t.Fatalf("blocking call from a continuation: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the calls on the loop took %v to fail", d)
	}
	if _, err := call(t, s, "StatsInline", nil); err != nil {
		t.Fatalf("Stats from a handler: %v", err)
	}

	// Session.Close and Endpoint.Close from a handler return at once.
	closing := erpc.NewServer()
	var own *erpc.Session
	closing.Handle("CloseSession", func(context.Context, []byte) ([]byte, error) {
		return nil, own.Close()
	})
	closed := make(chan error, 1)
	var cep *erpc.Endpoint
	closing.HandleRaw("CloseEndpoint", func(r erpc.Request) {
		r.Respond(nil)
		closed <- cep.Close()
	})
	cep = n.Listen(t, closing)
	own = dialT(t, n, cep, backend)
	cs := dialT(t, n, n.Listen(t, nil), cep)
	if _, err := call(t, cs, "CloseSession", nil); err != nil {
		t.Fatalf("Session.Close from a handler: %v", err)
	}
	if _, err := call(t, own, "Echo", nil); !errors.Is(err, erpc.ErrUnavailable) {
		t.Fatalf("call on the session closed from a handler: %v", err)
	}
	call(t, cs, "CloseEndpoint", nil)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Endpoint.Close from a handler did not return")
	}
}

// TestCallReturnsWhileLoopHeld: an inline handler that holds the loop
// (with handoff off, WithHandoff(-1)) does not hold up a caller whose deadline passes:
// the call returns on time, its buffer is the caller's again, and the
// stall is logged once, naming the method.
func TestCallReturnsWhileLoopHeld(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	backend := n.Listen(t, serverWith(t, "Echo", echoHandler))
	h := erpc.NewServer()
	h.Handle("Hog", func(context.Context, []byte) ([]byte, error) {
		time.Sleep(400 * time.Millisecond)
		return nil, nil
	})
	ep := n.Listen(t, h, erpc.WithStallLog(100*time.Millisecond), erpc.WithLogger(logger), erpc.WithHandoff(-1))
	viaEp := dialT(t, n, ep, backend) // calls that need ep's loop
	s := dialT(t, n, n.Listen(t, nil), ep)
	go call(t, s, "Hog", nil)
	time.Sleep(50 * time.Millisecond)
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
		start := time.Now()
		_, err := viaEp.Call(ctx, "Echo", []byte("x"), nil)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call while the loop is held: %v", err)
		}
		if d := time.Since(start); d > 200*time.Millisecond {
			t.Fatalf("a call with an 80 ms deadline returned after %v: it waited for the held loop", d)
		}
	}
	time.Sleep(400 * time.Millisecond)
	logMu.Lock()
	defer logMu.Unlock()
	if got := strings.Count(logs.String(), `held the endpoint's event loop`); got != 1 || !strings.Contains(logs.String(), `method=Hog`) {
		t.Fatalf("stall logged %d times (want once, naming \"Hog\"):\n%s", got, logs.String())
	}
}

// TestCloseWithNestedCallInFlight: Close returns while a background
// handler makes a call through the same endpoint during the shutdown
// (before, the workers were awaited while their calls waited for the loop
// that was awaiting them).
func TestCloseWithNestedCallInFlight(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	slow := n.Listen(t, serverWith(t, "Slow", func(ctx context.Context, req []byte) ([]byte, error) {
		time.Sleep(300 * time.Millisecond)
		return req, nil
	}, erpc.Background()))
	var toSlow *erpc.Session
	inCall := make(chan struct{}, 1)
	h := serverWith(t, "Nested", func(ctx context.Context, req []byte) ([]byte, error) {
		inCall <- struct{}{}
		<-ctx.Done() // the endpoint is closing: the call below is made during shutdown
		return toSlow.Call(context.Background(), "Slow", req, nil)
	}, erpc.Background())
	ep := n.Listen(t, h)
	toSlow = dialT(t, n, ep, slow)
	s := dialT(t, n, n.Listen(t, nil), ep)
	go call(t, s, "Nested", []byte("x"))
	<-inCall
	done := make(chan error, 1)
	go func() { done <- ep.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung with a background handler in a nested call")
	}
}

// TestCloseFromBackgroundHandler: a background handler may close its own
// endpoint (or shut it down); neither waits for itself.
func TestCloseFromBackgroundHandler(t *testing.T) {
	checkLeaks(t)
	for _, how := range []string{"Close", "Shutdown"} {
		n := newMemNet()
		done := make(chan error, 1)
		var ep *erpc.Endpoint
		h := serverWith(t, "Stop", func(context.Context, []byte) ([]byte, error) {
			if how == "Close" {
				done <- ep.Close()
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				done <- ep.Shutdown(ctx)
			}
			return nil, nil
		}, erpc.Background())
		ep = n.Listen(t, h)
		s := dialT(t, n, n.Listen(t, nil), ep)
		go call(t, s, "Stop", nil)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s from a background handler: %v", how, err)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("%s from a background handler did not return", how)
		}
	}
}
