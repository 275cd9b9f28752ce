package erpc

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGoexitInServerStats: a server's StatsHandler method that ends the
// loop's goroutine (runtime.Goexit, as t.FailNow does) where the loop
// calls it for a served call: as the request arrives (CallBegin), as its
// answer goes (CallEnd: an inline handler's, an OnLoop one's, a
// Background one's through the command queue) and for a request refused
// at once (no such method: CallBegin and CallEnd). The call is answered
// (with its handler's answer if it ran, else Internal, as never run), the
// Goexit is logged once naming the method, later calls are served, the
// loop runs on a fresh goroutine that passes the loop's identity checks,
// and Close returns. Before the guard the first Goexit killed the loop:
// the calls after it never completed and Close never returned.
func TestGoexitInServerStats(t *testing.T) {
	exitOn := func(cb, method string) func(statsCall) bool {
		return func(c statsCall) bool { return c.cb == cb && c.info.Server && c.info.Method == method }
	}
	for _, c := range []struct {
		name     string
		cb       string
		hopt     []HandlerOption
		noExit   bool // no "Exit" method: its requests are refused
		wantCode Code
	}{
		{"CallBegin", "CallBegin", nil, false, Internal},
		{"CallBegin, Background", "CallBegin", []HandlerOption{Background()}, false, Internal},
		{"CallEnd", "CallEnd", nil, false, OK},
		{"CallEnd, OnLoop", "CallEnd", []HandlerOption{OnLoop()}, false, OK},
		{"CallEnd, Background", "CallEnd", []HandlerOption{Background()}, false, OK},
		{"CallBegin, no such method", "CallBegin", nil, true, Unimplemented},
		{"CallEnd, no such method", "CallEnd", nil, true, Unimplemented},
	} {
		t.Run(c.name, func(t *testing.T) {
			method := "Exit"
			if c.noExit {
				method = "" // what CallInfo says of a method the server does not have
			}
			st := newExitStats(1<<30, exitOn(c.cb, method))
			srv := NewServer()
			echo := func(_ context.Context, req []byte) ([]byte, error) { return req, nil }
			if !c.noExit {
				if err := srv.Handle("Exit", echo, c.hopt...); err != nil {
					t.Fatal(err)
				}
			}
			if err := srv.Handle("Echo", echo, c.hopt...); err != nil {
				t.Fatal(err)
			}
			p := newStatsPair(t, srv, []Option{WithStatsHandler(st)}, nil)
			const rounds = 3
			for i := range rounds {
				req := []byte(fmt.Sprint("x", i))
				resp, err := p.callWithin(t, "Exit", req)
				if CodeOf(err) != c.wantCode {
					t.Fatalf("round %d: Exit: %v, want code %v", i, err, c.wantCode)
				}
				if c.wantCode == OK && !bytes.Equal(resp, req) {
					t.Fatalf("round %d: Exit answered %q, want %q", i, resp, req)
				}
				if c.wantCode == Internal && (!NotExecuted(err) || !strings.Contains(err.Error(), "Goexit")) {
					t.Fatalf("round %d: Exit: %v, want Internal, not executed, naming Goexit", i, err)
				}
				if resp, err := p.callWithin(t, "Echo", req); err != nil || !bytes.Equal(resp, req) {
					t.Fatalf("round %d: Echo after the Goexit: %q %v", i, resp, err)
				}
			}
			if got := st.exits.Load(); got != rounds {
				t.Fatalf("the stats handler called Goexit %d times, want %d", got, rounds)
			}
			checkLoopAlive(t, p.sep, st)
			checkGoexitsLogged(t, p.logs, c.cb, rounds)
			closeWithin(t, p.cep, 10*time.Second)
			closeWithin(t, p.sep, 10*time.Second)
		})
	}
}

// TestGoexitInStatsQueueFull: the CallEnd a server's StatsHandler is told
// of a request its full fixed pool refuses (ResourceExhausted) calls
// runtime.Goexit: the refused call still fails fast, the held ones are
// answered once released, and Close returns.
func TestGoexitInStatsQueueFull(t *testing.T) {
	st := newExitStats(1<<30, func(c statsCall) bool {
		return c.cb == "CallEnd" && c.info.Server && c.end.Code == ResourceExhausted
	})
	release := make(chan struct{})
	srv := NewServer()
	if err := srv.Handle("Hold", func(_ context.Context, req []byte) ([]byte, error) {
		<-release
		return req, nil
	}, Background()); err != nil {
		t.Fatal(err)
	}
	p := newStatsPair(t, srv, []Option{WithStatsHandler(st), WithWorkers(1), WithQueueDepth(1)}, nil)
	const calls = 6 // one runs, one waits, the rest are refused
	results := make(chan error, calls)
	for range calls {
		p.sess.Go("Hold", []byte("h"), nil, func(_ []byte, err error) { results <- err })
	}
	refused := 0
	for refused < calls-2 {
		select {
		case err := <-results:
			if CodeOf(err) != ResourceExhausted {
				t.Fatalf("a call ended before its release: %v", err)
			}
			refused++
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d calls refused after 10 s", refused, calls-2)
		}
	}
	close(release)
	for i := range 2 {
		select {
		case err := <-results:
			if err != nil {
				t.Fatalf("a held call: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("held call %d not answered 10 s after its release", i)
		}
	}
	if got := st.exits.Load(); got != calls-2 {
		t.Fatalf("the stats handler called Goexit %d times, want %d", got, calls-2)
	}
	checkLoopAlive(t, p.sep, st)
	checkGoexitsLogged(t, p.logs, "CallEnd", calls-2)
	closeWithin(t, p.cep, 10*time.Second)
	closeWithin(t, p.sep, 10*time.Second)
}

// TestGoexitInClientStatsCallEnd: a client's StatsHandler.CallEnd, which
// the loop calls as a Session.Go call completes, calls runtime.Goexit for
// a random (seeded) part of the calls, some of whose continuations make
// nested calls. Every continuation still runs, once, with its own
// response; each Goexit is logged once; the loop goes on; Close returns.
// Before the guard the first Goexit took the loop, and the continuation
// of its call never ran.
func TestGoexitInClientStatsCallEnd(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	st := newExitStats(1<<30, func(c statsCall) bool {
		return c.cb == "CallEnd" && !c.info.Server && c.info.Method == "Exit"
	})
	srv := NewServer()
	echo := func(_ context.Context, req []byte) ([]byte, error) { return req, nil }
	for _, m := range []string{"Exit", "Echo"} {
		if err := srv.Handle(m, echo); err != nil {
			t.Fatal(err)
		}
	}
	p := newStatsPair(t, srv, nil, []Option{WithStatsHandler(st)})
	const rounds, perRound = 20, 16
	var wantExits, ran atomic.Int64
	for round := range rounds {
		done := make(chan error, 2*perRound)
		want := 0
		for i := range perRound {
			method, nested := "Echo", rng.IntN(3) == 0
			if rng.IntN(2) == 0 {
				method = "Exit"
				wantExits.Add(1)
			}
			req := []byte(fmt.Sprintf("r%d-%d", round, i))
			nestedMethod := "Echo"
			if nested && rng.IntN(2) == 0 {
				nestedMethod = "Exit"
				wantExits.Add(1)
			}
			want++
			if nested {
				want++
			}
			p.sess.Go(method, req, nil, func(resp []byte, err error) {
				ran.Add(1)
				if err == nil && !bytes.Equal(resp, req) {
					err = fmt.Errorf("%s answered %q, want %q", method, resp, req)
				}
				done <- err
				if nested {
					p.sess.Go(nestedMethod, req, nil, func(resp []byte, err error) {
						ran.Add(1)
						if err == nil && !bytes.Equal(resp, req) {
							err = fmt.Errorf("nested %s answered %q, want %q", nestedMethod, resp, req)
						}
						done <- err
					})
				}
			})
		}
		for got := 0; got < want; got++ {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: %d of %d continuations ran within 10 s (%d Goexits so far)", round, got, want, st.exits.Load())
			}
		}
	}
	if st.exits.Load() != wantExits.Load() {
		t.Fatalf("the stats handler called Goexit %d times, want %d", st.exits.Load(), wantExits.Load())
	}
	checkLoopAlive(t, p.cep, st)
	checkGoexitsLogged(t, p.logs, "CallEnd", st.exits.Load())
	closeWithin(t, p.cep, 10*time.Second)
	closeWithin(t, p.sep, 10*time.Second)
	t.Logf("%d continuations ran, %d Goexits", ran.Load(), st.exits.Load())
}
