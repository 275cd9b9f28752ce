package erpc_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
)

// execLog counts, per request payload, how many times a handler ran it:
// what proves a call did or did not run.
type execLog struct {
	mu  sync.Mutex
	ran map[string]int
	// Hold blocks its handler until release is closed or the request's
	// context ends, after recording that it ran.
	release chan struct{}
	started chan string
}

func newExecLog() *execLog {
	return &execLog{ran: map[string]int{}, release: make(chan struct{}), started: make(chan string, 64)}
}

func (l *execLog) record(req []byte) {
	l.mu.Lock()
	l.ran[string(req)]++
	l.mu.Unlock()
}

func (l *execLog) runs(req string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ran[req]
}

// server has Work (records and answers), Nap (records, sleeps a
// millisecond, answers) and Hold (records, then waits).
func (l *execLog) server(t *testing.T) *erpc.Server {
	srv := erpc.NewServer()
	must(t, srv.Handle("Work", func(_ context.Context, req []byte) ([]byte, error) {
		l.record(req)
		return req, nil
	}, erpc.Background()))
	must(t, srv.Handle("Nap", func(_ context.Context, req []byte) ([]byte, error) {
		l.record(req)
		time.Sleep(time.Millisecond)
		return req, nil
	}, erpc.Background()))
	must(t, srv.Handle("Hold", func(ctx context.Context, req []byte) ([]byte, error) {
		l.record(req)
		l.started <- string(req)
		select {
		case <-l.release:
		case <-ctx.Done():
		}
		return req, nil
	}, erpc.Background()))
	return srv
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantNotRun checks that err is a failure with code that proves its call
// never ran, and that the server's handlers indeed never ran req.
func wantNotRun(t *testing.T, l *execLog, what, req string, err error, code erpc.Code) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("%s: succeeded, want %v", what, code)
	case erpc.CodeOf(err) != code:
		t.Fatalf("%s: %v, want code %v", what, err, code)
	case !erpc.NotExecuted(err) || !errors.Is(err, erpc.ErrNotExecuted):
		t.Fatalf("%s: %v: NotExecuted false, want true", what, err)
	case l != nil && l.runs(req) != 0:
		t.Fatalf("%s: NotExecuted, but the handler ran it %d times", what, l.runs(req))
	}
}

// wantMayHaveRun checks that err is a failure that does not claim its
// call never ran, for a call whose handler did run.
func wantMayHaveRun(t *testing.T, l *execLog, what, req string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("%s: succeeded, want a failure", what)
	case erpc.NotExecuted(err):
		t.Fatalf("%s: %v: NotExecuted true, but the handler ran it %d times", what, err, l.runs(req))
	case l.runs(req) != 1:
		t.Fatalf("%s: the handler ran it %d times, want 1 (the test did not do what it says)", what, l.runs(req))
	}
}

// TestNotExecutedRefusals: every refusal, by the server or by the client,
// before the request ran says so, and the server's handlers confirm.
func TestNotExecutedRefusals(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	l := newExecLog()
	defer func() { close(l.release) }()
	h := l.server(t)
	must(t, erpc.Register(h, "Point", func(_ context.Context, p *point) (*point, error) {
		l.record([]byte("point"))
		return p, nil
	}))
	srv := n.Listen(t, h, erpc.WithWorkers(1), erpc.WithQueueDepth(1), erpc.WithMaxMessageSize(refusalMax))
	cli := n.Listen(t, nil)
	s := dialT(t, n, cli, srv)

	_, err := call(t, s, "Point", []byte("not a point"))
	wantNotRun(t, l, "a typed request the server cannot decode", "point", err, erpc.InvalidArgument)
	if _, err := erpc.Invoke[point](context.Background(), s, "Point", &point{X: 1, Y: 2}); err != nil || l.runs("point") != 1 {
		t.Fatalf("a good typed call: %v, ran %d times", err, l.runs("point"))
	}

	_, err = call(t, s, "Nope", []byte("nope"))
	wantNotRun(t, l, "a method the server lacks", "nope", err, erpc.Unimplemented)
	if !strings.Contains(err.Error(), `no method "Nope"`) {
		t.Fatalf("unknown method: %v, want it named", err)
	}
	_, err = call(t, s, "Work", make([]byte, refusalMax+1))
	wantNotRun(t, l, "a request over the session's limit", string(make([]byte, refusalMax+1)), err, erpc.InvalidArgument)

	// The server is full: Hold holds the worker, one request waits, the
	// next is refused.
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { _, _ = call(t, s, "Hold", []byte("held")) })
	<-l.started
	wg.Go(func() { _, _ = call(t, s, "Work", []byte("queued")) })
	waitHeld(t, srv, 2)
	_, err = call(t, s, "Work", []byte("refused"))
	wantNotRun(t, l, "a request the full server refused", "refused", err, erpc.ResourceExhausted)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Call(ctx, "Work", []byte("canceled"), nil)
	wantNotRun(t, l, "a call whose context had ended", "canceled", err, erpc.Canceled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled call: %v does not match context.Canceled", err)
	}
	if erpc.NotExecuted(nil) || erpc.NotExecuted(context.Canceled) || erpc.NotExecuted(erpc.ErrUnavailable) {
		t.Fatal("NotExecuted holds for nil or a bare error")
	}

	// Shutdown refuses new requests while Hold drains.
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	for i := 0; ; i++ {
		req := fmt.Sprintf("late %d", i)
		_, err := call(t, s, "Work", []byte(req))
		if err == nil {
			time.Sleep(time.Millisecond) // not draining yet
			continue
		}
		wantNotRun(t, l, "a request to a server shutting down", req, err, erpc.Unavailable)
		break
	}
	l.release <- struct{}{} // Hold answers; Shutdown completes
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	s.Close()
	_, err = call(t, s, "Work", []byte("after close"))
	wantNotRun(t, l, "a call on a closed session", "after close", err, erpc.Unavailable)
	cli.Close()
	_, err = call(t, s, "Work", []byte("after endpoint close"))
	wantNotRun(t, l, "a call on a closed endpoint", "after endpoint close", err, erpc.Unavailable)
}

// TestHandlerCannotClaimNotExecuted: a handler's error that carries the
// never-ran mark among its details reaches the caller without it.
func TestHandlerCannotClaimNotExecuted(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	srv := n.Listen(t, serverWith(t, "Liar", func(context.Context, []byte) ([]byte, error) {
		return nil, &erpc.Error{Code: erpc.Unavailable, Msg: "lie", Details: []erpc.Detail{{Type: "erpc.NotExecuted"}, {Type: "kept"}}}
	}))
	s := dialT(t, n, n.Listen(t, nil), srv)
	_, err := call(t, s, "Liar", nil)
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.Unavailable || erpc.NotExecuted(err) || len(e.Details) != 1 || e.Details[0].Type != "kept" {
		t.Fatalf("a handler's error: %#v, want Unavailable with its own detail and NotExecuted false", err)
	}
}

// TestNotExecutedSessionEnds: calls whose session ended before they
// reached a live server session say they never ran; calls that reached a
// handler and then lost their answer do not.
func TestNotExecutedSessionEnds(t *testing.T) {
	checkLeaks(t)
	t.Run("queued behind the window when the session closes", func(t *testing.T) {
		n := newMemNet()
		l := newExecLog()
		defer close(l.release)
		srv := n.Listen(t, l.server(t))
		s := dialT(t, n, n.Listen(t, nil, erpc.WithWindow(1)), srv)
		errs := make(chan error, 1)
		go func() { _, err := call(t, s, "Hold", []byte("in flight")); errs <- err }()
		<-l.started
		queued := make(chan error, 1)
		go func() { _, err := call(t, s, "Work", []byte("queued")); queued <- err }()
		for cliPending(s) < 2 {
			time.Sleep(time.Millisecond)
		}
		s.Close()
		wantNotRun(t, l, "a call still queued when its session closed", "queued", <-queued, erpc.Unavailable)
		wantMayHaveRun(t, l, "a call running when its session closed", "in flight", <-errs)
	})
	t.Run("never sent: the reconnect fails", func(t *testing.T) {
		n := newMemNet()
		l := newExecLog()
		defer close(l.release)
		srv := n.Listen(t, l.server(t))
		cli := n.Listen(t, nil, erpc.WithFailureTimeout(50*time.Millisecond))
		s := dialT(t, n, cli, srv)
		srv.Close()
		waitSessions(t, cli, srv, 0, 0) // told: the next call dials a server that is gone
		_, err := call(t, s, "Work", []byte("nowhere"))
		wantNotRun(t, l, "a call whose reconnect failed", "nowhere", err, erpc.Unavailable)
		if !errors.Is(err, erpc.ErrUnavailable) {
			t.Fatalf("%v does not match ErrUnavailable", err)
		}
	})
	t.Run("server closed while its handler runs", func(t *testing.T) {
		n := newMemNet()
		l := newExecLog()
		defer close(l.release)
		srv := n.Listen(t, l.server(t))
		s := dialT(t, n, n.Listen(t, nil), srv)
		errs := make(chan error, 1)
		go func() { _, err := call(t, s, "Hold", []byte("ran")); errs <- err }()
		<-l.started
		srv.Close() // tells the client; the answer is lost
		wantMayHaveRun(t, l, "a call whose server closed after its handler ran", "ran", <-errs)
	})
	t.Run("server restarted unheard: stale session reset", func(t *testing.T) {
		n := newMemNet()
		l := newExecLog()
		defer close(l.release)
		srv := newRestartable(t, n, l.server(t))
		cli := n.Listen(t, nil, erpc.WithFailureTimeout(5*time.Second))
		s := dialT(t, n, cli, srv.ep)
		if _, err := call(t, s, "Work", []byte("before")); err != nil {
			t.Fatal(err)
		}
		// One in flight, whose handler runs, when the server dies
		// without a word; the restarted server serves no handlers, so
		// the call resent after its reset cannot reconnect either.
		errs := make(chan error, 1)
		go func() { _, err := call(t, s, "Hold", []byte("ran")); errs <- err }()
		<-l.started
		n.net.SetLink(srv.ep.Addr(), cli.Addr(), memnet.LinkConfig{Down: true})
		srv.ep.Close()
		tr, err := n.net.Listen(srv.addr)
		must(t, err)
		bare := listenT(t, nil, "", erpc.WithTransport(tr))
		n.net.SetLink(bare.Addr(), cli.Addr(), memnet.LinkConfig{})
		// A reset proves what was sent after the server's engine first
		// saw the time, which a packet from another client sets.
		if _, err := n.Listen(t, nil).Dial(context.Background(), srv.addr); err == nil {
			t.Fatal("dialed an endpoint that serves nothing")
		}
		time.Sleep(2 * time.Millisecond)
		_, err = call(t, s, "Work", []byte("after"))
		wantNotRun(t, l, "a call sent after the server lost the session", "after", err, erpc.Unimplemented)
		wantMayHaveRun(t, l, "a call in flight when the server died", "ran", <-errs)
		if st := bare.Stats(); st.ResetsSent == 0 {
			t.Fatal("the restarted server sent no reset: the test did not attack what it says")
		}
	})
}

// TestNotExecutedNeverLies: calls from several goroutines while the
// server dies, with a notice or unheard, stays down a while and comes
// back, again and again, each time with a call running. Every call that
// says it never ran did not run;
// every success ran once; nothing ran twice. Some calls do fail with the
// mark (the downtimes outlast the failure timeout), and some succeed.
func TestNotExecutedNeverLies(t *testing.T) {
	checkLeaks(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 9))
	n := newMemNet()
	l := newExecLog()
	defer close(l.release)
	srv := newRestartable(t, n, l.server(t))
	cli := n.Listen(t, nil, erpc.WithFailureTimeout(30*time.Millisecond))
	s := dialT(t, n, cli, srv.ep)

	type outcome struct {
		req string
		err error
	}
	var mu sync.Mutex
	var outcomes []outcome
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req := fmt.Sprintf("%d/%d", g, i)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := s.Call(ctx, "Nap", []byte(req), nil)
				cancel()
				mu.Lock()
				outcomes = append(outcomes, outcome{req, err})
				mu.Unlock()
				if err != nil {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	const rounds = 6
	for round := range rounds {
		time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond)
		// One call surely runs when the server dies: its answer is lost.
		// (It may first be refused, while the session backs off.)
		for try := 0; ; try++ {
			held := fmt.Sprintf("hold/%d/%d", round, try)
			done := make(chan struct{})
			wg.Go(func() {
				defer close(done)
				_, err := call(t, s, "Hold", []byte(held))
				mu.Lock()
				outcomes = append(outcomes, outcome{held, err})
				mu.Unlock()
			})
			if waitStarted(l, held, done) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		unheard := rng.IntN(2) == 0
		if unheard {
			n.net.SetLink(srv.ep.Addr(), cli.Addr(), memnet.LinkConfig{Down: true})
		}
		srv.ep.Close()
		n.net.SetLink(srv.ep.Addr(), cli.Addr(), memnet.LinkConfig{})
		down := time.Duration(rng.IntN(120)) * time.Millisecond
		if round == 0 {
			down = 150 * time.Millisecond // outlasts the failure timeout for sure
		}
		time.Sleep(down)
		srv.restart()
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()

	var ok, notRun, other int
	for _, o := range outcomes {
		runs := l.runs(o.req)
		switch {
		case runs > 1:
			t.Fatalf("call %s ran %d times", o.req, runs)
		case o.err == nil:
			ok++
			if runs != 1 {
				t.Fatalf("call %s succeeded but ran %d times", o.req, runs)
			}
		case erpc.NotExecuted(o.err):
			notRun++
			if runs != 0 {
				t.Fatalf("call %s: %v: NotExecuted, but it ran", o.req, o.err)
			}
		default:
			other++
		}
	}
	t.Logf("%d calls: %d succeeded, %d never ran, %d may have run", len(outcomes), ok, notRun, other)
	if ok == 0 || notRun == 0 || other == 0 {
		t.Fatalf("%d succeeded, %d never ran, %d may have run: the test did not attack all three", ok, notRun, other)
	}
}

// waitStarted waits until Hold runs req, or done closes first (the call
// failed before it ran) and reports which. It skips an earlier Hold's
// start.
func waitStarted(l *execLog, req string, done <-chan struct{}) bool {
	for {
		select {
		case got := <-l.started:
			if got == req {
				return true
			}
		case <-done:
			return false
		}
	}
}

// cliPending is the number of calls the session's endpoint has pending.
func cliPending(s *erpc.Session) int { return s.Endpoint().Stats().PendingCalls }
