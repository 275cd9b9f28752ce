package erpc_test

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestHandlerGoexit: a handler that ends its goroutine with runtime.Goexit
// (t.FailNow in a test handler does) gets an Internal answer, the endpoint
// goes on serving (inline: its loop moves to a fresh goroutine; a fixed
// worker is replaced), and Close returns with nothing left behind. Before
// the fix an inline handler's Goexit left Close waiting forever.
func TestHandlerGoexit(t *testing.T) {
	for _, c := range []struct {
		name string
		hopt []erpc.HandlerOption
		eopt []erpc.Option
	}{
		{"inline", nil, nil},
		{"inline, handoff off", nil, []erpc.Option{erpc.WithHandoff(-1)}},
		{"OnLoop", []erpc.HandlerOption{erpc.OnLoop()}, nil},
		{"Background, elastic", []erpc.HandlerOption{erpc.Background()}, nil},
		{"Background, one fixed worker", []erpc.HandlerOption{erpc.Background()}, []erpc.Option{erpc.WithWorkers(1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkLeaks(t)
			srv := erpc.NewServer()
			if err := srv.Handle("Exit", func(context.Context, []byte) ([]byte, error) {
				runtime.Goexit()
				return nil, nil
			}, c.hopt...); err != nil {
				t.Fatal(err)
			}
			if err := srv.Handle("Echo", echoHandler, c.hopt...); err != nil {
				t.Fatal(err)
			}
			n := newMemNet()
			tr, err := n.net.Listen("")
			if err != nil {
				t.Fatal(err)
			}
			ep, err := srv.Listen("", append(c.eopt, erpc.WithTransport(tr), erpc.WithLogger(slog.New(slog.DiscardHandler)))...)
			if err != nil {
				t.Fatal(err)
			}
			s := dialT(t, n, n.Listen(t, nil), ep)
			for i := range 3 { // the loop (or the worker) ends three times
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := s.Call(ctx, "Exit", nil, nil)
				cancel()
				if erpc.CodeOf(err) != erpc.Internal || !strings.Contains(err.Error(), "Goexit") {
					t.Fatalf("call %d: %v, want Internal naming Goexit", i, err)
				}
				ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
				resp, err := s.Call(ctx, "Echo", []byte("x"), nil)
				cancel()
				if err != nil || string(resp) != "x" {
					t.Fatalf("echo after Goexit %d: %q %v", i, resp, err)
				}
			}
			done := make(chan error, 1)
			go func() { done <- ep.Close() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Close has not returned 10 s after handlers called Goexit")
			}
		})
	}
}

// TestStallLoggedWithHandoffOn: with handoff on (the default), the
// watchdog ticks every 100 us while the loop is awake, and an idle
// process's timers fire up to a millisecond late: the stall log must go by
// the clock, not by counting ticks (500 ticks of 100 us took longer than
// 150 ms: 0 and 1 of 4 holds logged before the fix). An OnLoop handler holding the loop 150 ms with a 100 ms
// stall log is logged every time (a 2.5 s hold was never logged with the
// default 1 s).
func TestStallLoggedWithHandoffOn(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &mu}, nil))
	srv := erpc.NewServer()
	if err := srv.Handle("Hold", func(_ context.Context, req []byte) ([]byte, error) {
		time.Sleep(150 * time.Millisecond)
		return req, nil
	}, erpc.OnLoop()); err != nil {
		t.Fatal(err)
	}
	n := newMemNet()
	ep := n.Listen(t, srv, erpc.WithStallLog(100*time.Millisecond), erpc.WithLogger(logger))
	s := dialT(t, n, n.Listen(t, nil), ep)
	const rounds = 4
	for i := range rounds {
		time.Sleep(20 * time.Millisecond) // the endpoint goes idle between holds
		if _, err := call(t, s, "Hold", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Count(logs.String(), "method=Hold"); got != rounds {
		t.Errorf("%d of %d holds of 150 ms logged with a 100 ms stall log:\n%s", got, rounds, logs.String())
	}
}
