package erpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/faults"
	"github.com/erpc-go/erpc/transport/memnet"
)

// The tests of this file each cover a trap a new user fell into (issue
// 14): the order of serving and registering, blocking on the event loop,
// deadlines, errors, defaults.

// TestHandlersBeforeServing: handlers are registered before the endpoint
// answers anything, and registering after it serves fails. A client that
// keeps calling while its server restarts, again and again, never gets
// Unimplemented (before, a client that reached a restarting server between
// Listen and Handle got it every time, and took it as permanent).
func TestHandlersBeforeServing(t *testing.T) {
	checkLeaks(t)
	srv := serverWith(t, "Echo", echoHandler)
	ep, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ep.Addr().String()
	if err := srv.Handle("Late", echoHandler); erpc.CodeOf(err) != erpc.FailedPrecondition {
		t.Fatalf("registering on a serving server: %v, want FailedPrecondition", err)
	}
	s := dialT(t, udpNet{}, udpNet{}.Listen(t, nil), ep)
	stop := make(chan struct{})
	var calls, unavailable atomic.Int32
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := s.Call(ctx, "Echo", []byte("x"), nil)
			cancel()
			calls.Add(1)
			switch erpc.CodeOf(err) {
			case erpc.OK:
			case erpc.Unavailable, erpc.DeadlineExceeded:
				unavailable.Add(1)
			default:
				t.Errorf("call during restarts: %v", err)
			}
		}
	})
	for range 10 {
		time.Sleep(20 * time.Millisecond)
		ep.Close()
		time.Sleep(5 * time.Millisecond)
		if ep, err = srv.Listen(addr); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	ep.Close()
	t.Logf("%d calls across 10 restarts, %d Unavailable", calls.Load(), unavailable.Load())
}

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

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
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

// TestDeadlineTravels: the caller's deadline reaches the handler.
func TestDeadlineTravels(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	type seen struct {
		ctx, req time.Time
		ok       bool
	}
	got := make(chan seen, 2)
	h := erpc.NewServer()
	h.HandleRaw("Deadline", func(r erpc.Request) {
		d1, ok1 := r.Context().Deadline()
		d2, ok2 := r.Deadline()
		got <- seen{d1, d2, ok1 && ok2}
		r.Respond(nil)
	})
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, h))
	want := time.Now().Add(3 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), want)
	defer cancel()
	if _, err := s.Call(ctx, "Deadline", nil, nil); err != nil {
		t.Fatal(err)
	}
	g := <-got
	if !g.ok || g.ctx.After(want) || want.Sub(g.ctx) > 50*time.Millisecond || !g.ctx.Equal(g.req) {
		t.Fatalf("handler saw deadline %v (set: %v), the caller's is %v", g.ctx, g.ok, want)
	}
	if _, err := s.Call(context.Background(), "Deadline", nil, nil); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g.ok {
		t.Fatalf("a call without a deadline reached the handler with one: %v", g.ctx)
	}
}

// TestErrorsUsersCanActOn: mistakes fail at once, and errors say what and
// where.
func TestErrorsUsersCanActOn(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	for _, target := range []string{"", "udp://", "127.0.0.1:0", "localhost", "udp://:31850"} {
		start := time.Now()
		_, err := erpc.Dial(ctx, target)
		if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), fmt.Sprintf("%q", target)) {
			t.Errorf("Dial(%q): %v, want InvalidArgument naming the target", target, err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("Dial(%q) took %v to fail", target, d)
		}
	}
	if _, err := erpc.Dial(ctx, "bogus://x"); erpc.CodeOf(err) != erpc.InvalidArgument {
		t.Errorf("unknown scheme: %v", err)
	}
	for _, addr := range []string{"bogus://x", "no-port", "256.1.1.1:80"} {
		var e *erpc.Error
		if _, err := erpc.Listen(addr); !errors.As(err, &e) {
			t.Errorf("Listen(%q): %T %v, want an *erpc.Error", addr, err, err)
		}
	}
	udpEp := udpNet{}.Listen(t, nil)
	if _, err := udpEp.Dial(ctx, "shm:///tmp/x.sock"); erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "udp://") {
		t.Errorf("shm target from a UDP endpoint: %v, want InvalidArgument naming the transports", err)
	}
	if _, err := erpc.Dial(ctx, "shm://"+filepath.Join(t.TempDir(), "none.sock")); erpc.CodeOf(err) != erpc.Unavailable ||
		!strings.Contains(err.Error(), "no endpoint listens") {
		t.Errorf("shm path with nothing there: %v", err)
	}
	// A dial that times out names its target.
	dead, err := erpc.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadTarget := dead.Target()
	dead.Close()
	_, err = erpc.Dial(ctx, deadTarget, erpc.WithFailureTimeout(200*time.Millisecond))
	if erpc.CodeOf(err) != erpc.Unavailable || !strings.Contains(err.Error(), deadTarget) || strings.Count(err.Error(), "erpc:") != 1 {
		t.Errorf("dial with nothing listening: %v", err)
	}

	n := newMemNet()
	h := erpc.NewServer()
	h.Handle("Echo", echoHandler)
	srv := n.Listen(t, h, erpc.WithMaxMessageSize(1000))
	s := dialT(t, n, n.Listen(t, nil), srv)
	_, err = call(t, s, "Missing", nil)
	if erpc.CodeOf(err) != erpc.Unimplemented || !strings.Contains(err.Error(), `"Missing"`) {
		t.Errorf("unknown method: %v, want Unimplemented naming it", err)
	}
	_, err = call(t, s, "Echo", make([]byte, 5000))
	if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "5000") || !strings.Contains(err.Error(), "1000") {
		t.Errorf("request over the session's limit: %v, want InvalidArgument with both sizes", err)
	}
	if strings.Count(fmt.Sprint(err), "erpc:") != 1 {
		t.Errorf("error text repeats its prefix: %v", err)
	}
	// The endpoint of an in-memory or shared-memory server can be dialed
	// at its Target.
	memSrv, err := serverWith(t, "Echo", echoHandler).Listen("mem://" + t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer memSrv.Close()
	ms, err := erpc.Dial(ctx, memSrv.Target())
	if err != nil {
		t.Fatalf("dial %s: %v", memSrv.Target(), err)
	}
	if resp, err := call(t, ms, "Echo", []byte("mem")); err != nil || string(resp) != "mem" {
		t.Fatalf("call over %s: %q %v", memSrv.Target(), resp, err)
	}
	ms.Close()
}

// TestTooLargeIsInvalidArgument: a request over the smaller of the two
// ends' limits is the caller's mistake, not a full server: InvalidArgument
// with both sizes, not ResourceExhausted. (A server's NACK for a request
// too large, which only a client that ignores the negotiated limit can
// draw, maps the same way: TestClientTable_NackAndReset.)
func TestTooLargeIsInvalidArgument(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	srv := n.Listen(t, serverWith(t, "Echo", echoHandler), erpc.WithMaxMessageSize(4000))
	s := dialT(t, n, n.Listen(t, nil), srv)
	_, err := call(t, s, "Echo", make([]byte, 8000))
	if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "4000") || !strings.Contains(err.Error(), "8000") {
		t.Fatalf("too large for the server: %v, want InvalidArgument with its limit", err)
	}
}

// TestBackgroundDefaults: by default, eight concurrent 50 ms background
// calls all run (before, the default queue of 2 x GOMAXPROCS refused most
// with ResourceExhausted on a small machine).
func TestBackgroundDefaults(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	srv := n.Listen(t, serverWith(t, "Sleep", func(_ context.Context, req []byte) ([]byte, error) {
		time.Sleep(50 * time.Millisecond)
		return req, nil
	}, erpc.Background()))
	s := dialT(t, n, n.Listen(t, nil), srv)
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			if _, err := call(t, s, "Sleep", []byte("z")); err != nil {
				t.Errorf("concurrent background call: %v", err)
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d > 400*time.Millisecond {
		t.Errorf("8 concurrent 50 ms calls took %v: they did not run at once", d)
	}
}

// TestTypeMismatch: a client and a server that disagree on a typed
// method's protobuf types get an error naming them, not a message decoded
// into the wrong type.
func TestTypeMismatch(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	h := erpc.NewServer()
	if err := erpc.Register(h, "Get", func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return wrapperspb.String("for " + req.GetValue()), nil
	}); err != nil {
		t.Fatal(err)
	}
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, h))
	ctx := context.Background()
	if got, err := erpc.Invoke[wrapperspb.StringValue](ctx, s, "Get", wrapperspb.String("x")); err != nil || got.GetValue() != "for x" {
		t.Fatalf("matching types: %v %v", got, err)
	}
	_, err := erpc.Invoke[wrapperspb.Int64Value](ctx, s, "Get", wrapperspb.Int64(7))
	if erpc.CodeOf(err) != erpc.Unimplemented || !strings.Contains(err.Error(), "google.protobuf.Int64Value") {
		t.Fatalf("other types: %v, want Unimplemented naming the types", err)
	}
	// A raw caller reaches the method by name.
	b, _ := proto.Marshal(wrapperspb.String("raw"))
	if resp, err := s.Call(ctx, "Get", b, nil); err != nil || len(resp) == 0 {
		t.Fatalf("raw call of a typed method: %v", err)
	}
}

// TestCoreDependencies: the core package needs only the standard library
// and golang.org/x/sys; protobuf support lives in codec/protocodec.
func TestCoreDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		"github.com/erpc-go/erpc").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Fields(string(out)) {
		if !strings.HasPrefix(line, "github.com/erpc-go/erpc") && !strings.HasPrefix(line, "golang.org/x/sys") {
			t.Errorf("the core package depends on %s", line)
		}
	}
}

// TestPanicStackReadable: a handler's panic is logged with its stack on
// lines of their own, not folded into one line.
func TestPanicStackReadable(t *testing.T) {
	checkLeaks(t)
	rec := &recordHandler{}
	n := newMemNet()
	srv := n.Listen(t, serverWith(t, "Boom", func(context.Context, []byte) ([]byte, error) { panic("kaboom") }),
		erpc.WithLogger(slog.New(rec)))
	s := dialT(t, n, n.Listen(t, nil), srv)
	if _, err := call(t, s, "Boom", nil); erpc.CodeOf(err) != erpc.Internal {
		t.Fatalf("panicking handler: %v", err)
	}
	msgs := rec.messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0], `"Boom" panicked: kaboom`) ||
		strings.Count(msgs[0], "\n") < 4 || !strings.Contains(msgs[0], "firsthour_test.go") {
		t.Fatalf("panic logged as %q; want the method, the value and the stack, one frame a line", msgs)
	}
}

type recordHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}

func (h *recordHandler) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs...)
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

// TestTargets: every endpoint that can be dialed says what to dial, with
// its scheme, also when its transport was given with WithTransport (and
// wrapped, as the fault injector does); and it knows its Server.
func TestTargets(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	h := serverWith(t, "Echo", echoHandler)
	net := memnet.NewNetwork(1, memnet.LinkConfig{})
	named, err := net.Listen("named")
	if err != nil {
		t.Fatal(err)
	}
	lossless, err := faults.UDP("127.0.0.1:0", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr   string
		opt    []erpc.Option
		prefix string
	}{
		{"127.0.0.1:0", nil, "udp://127.0.0.1:"},
		{"mem://" + t.Name(), nil, "mem://" + t.Name()},
		{"", []erpc.Option{erpc.WithTransport(named)}, "mem://named"},
		{"", []erpc.Option{erpc.WithTransport(lossless)}, "udp://127.0.0.1:"},
		{"shm://" + filepath.Join(t.TempDir(), "t.sock"), nil, "shm:///"},
	} {
		ep, err := h.Listen(c.addr, c.opt...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(ep.Target(), c.prefix) || ep.Server() != h {
			t.Errorf("Listen(%q): Target %q, want %q...; Server %p, want %p", c.addr, ep.Target(), c.prefix, ep.Server(), h)
		}
		cli, err := erpc.Listen("", erpc.WithTransport(mustListen(t, net)))
		if err != nil {
			t.Fatal(err)
		}
		if c.prefix == "mem://named" { // dial within that network
			s, err := cli.Dial(ctx, ep.Target())
			if err != nil {
				t.Fatalf("dial %s: %v", ep.Target(), err)
			}
			if resp, err := call(t, s, "Echo", []byte("x")); err != nil || string(resp) != "x" {
				t.Fatalf("call %s: %q %v", ep.Target(), resp, err)
			}
		} else {
			s, err := erpc.Dial(ctx, ep.Target())
			if err != nil {
				t.Fatalf("dial %s: %v", ep.Target(), err)
			}
			if resp, err := call(t, s, "Echo", []byte("x")); err != nil || string(resp) != "x" {
				t.Errorf("call %s: %q %v", ep.Target(), resp, err)
			}
			s.Close()
		}
		cli.Close()
		ep.Close()
	}
	if ep := (udpNet{}).Listen(t, nil); ep.Server() != nil {
		t.Errorf("a calls-only endpoint has a server")
	}
}

func mustListen(t *testing.T, n *memnet.Network) *memnet.Transport {
	tr, err := n.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
