package erpc_test

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/faults"
	"github.com/erpc-go/erpc/transport/memnet"
)

// The tests of this file each cover a trap a new user fell into (issue
// 14): the order of serving and registering, blocking on the event loop,
// deadlines, errors, defaults. Those about the event loop and closing are
// in firsthour_loop_test.go, those about errors in firsthour_errors_test.go.

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

// TestDeadlineTravels: the caller's deadline reaches the handler. It
// travels as the time left when the request goes out, so the handler's
// is the caller's, later by at most the request's transit (what passed
// from the Call to the handler's start: under load, a few milliseconds)
// and earlier by at most the encoding's rounding (0.1 %).
func TestDeadlineTravels(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	type seen struct {
		ctx, req, at time.Time
		ok           bool
	}
	got := make(chan seen, 2)
	h := erpc.NewServer()
	h.HandleRaw("Deadline", func(r erpc.Request) {
		at := time.Now()
		d1, ok1 := r.Context().Deadline()
		d2, ok2 := r.Deadline()
		got <- seen{d1, d2, at, ok1 && ok2}
		r.Respond(nil)
	})
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, h))
	start := time.Now()
	want := start.Add(3 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), want)
	defer cancel()
	if _, err := s.Call(ctx, "Deadline", nil, nil); err != nil {
		t.Fatal(err)
	}
	g := <-got
	transit := g.at.Sub(start)
	if !g.ok || g.ctx.After(want.Add(transit)) || want.Sub(g.ctx) > 50*time.Millisecond || !g.ctx.Equal(g.req) {
		t.Fatalf("handler saw deadline %v (set: %v), the caller's is %v (the request's transit at most %v)", g.ctx, g.ok, want, transit)
	}
	if _, err := s.Call(context.Background(), "Deadline", nil, nil); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g.ok {
		t.Fatalf("a call without a deadline reached the handler with one: %v", g.ctx)
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
