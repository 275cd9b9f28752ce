package erpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	_ "github.com/erpc-go/erpc/codec/protocodec"
	"github.com/erpc-go/erpc/internal/faults"
	"github.com/erpc-go/erpc/transport/memnet"
	"github.com/erpc-go/erpc/transport/rpctest"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// memNet: endpoints on a fresh in-memory network per test.
type memNet struct{ net *memnet.Network }

func newMemNet() *memNet { return &memNet{memnet.NewNetwork(1, memnet.LinkConfig{})} }

func (n *memNet) Listen(t *testing.T, srv *erpc.Server, opts ...erpc.Option) *erpc.Endpoint {
	tr, err := n.net.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	return listenT(t, srv, "", append(opts, erpc.WithTransport(tr))...)
}

// listenT opens an endpoint on addr serving srv (nil: calls only), closed
// when the test ends.
func listenT(t *testing.T, srv *erpc.Server, addr string, opts ...erpc.Option) *erpc.Endpoint {
	t.Helper()
	var ep *erpc.Endpoint
	var err error
	if srv == nil {
		ep, err = erpc.Listen(addr, opts...)
	} else {
		ep, err = srv.Listen(addr, opts...)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

// serverWith returns a server with one handler.
func serverWith(t *testing.T, method string, fn func(context.Context, []byte) ([]byte, error), opts ...erpc.HandlerOption) *erpc.Server {
	t.Helper()
	srv := erpc.NewServer()
	if err := srv.Handle(method, fn, opts...); err != nil {
		t.Fatal(err)
	}
	return srv
}

func echoHandler(_ context.Context, req []byte) ([]byte, error) { return req, nil }

func (n *memNet) Target(ep *erpc.Endpoint) string { return ep.Addr().String() }

// udpNet: endpoints on UDP loopback.
type udpNet struct{}

func (udpNet) Listen(t *testing.T, srv *erpc.Server, opts ...erpc.Option) *erpc.Endpoint {
	return listenT(t, srv, "127.0.0.1:0", opts...)
}

func (udpNet) Target(ep *erpc.Endpoint) string { return ep.Addr().String() }

func TestConformanceMemnet(t *testing.T) {
	checkLeaks(t)
	rpctest.RunRPC(t, newMemNet())
}

func TestConformanceUDP(t *testing.T) {
	checkLeaks(t)
	rpctest.RunRPC(t, udpNet{})
}

// checkLeaks fails the test if goroutines of erpc outlive it.
func checkLeaks(t *testing.T) {
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for {
			var buf [1 << 20]byte
			stacks := string(buf[:runtime.Stack(buf[:], true)])
			var leaked []string
			for _, g := range strings.Split(stacks, "\n\n") {
				if strings.Contains(g, "github.com/erpc-go/erpc.") && !strings.Contains(g, "checkLeaks") &&
					!strings.Contains(g, "testing.tRunner") {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines leaked:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func call(t *testing.T, s *erpc.Session, method string, req []byte) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Call(ctx, method, req, nil)
}

func dialT(t *testing.T, n rpctest.Net, cli, srv *erpc.Endpoint) *erpc.Session {
	t.Helper()
	s, err := cli.Dial(context.Background(), n.Target(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestThousandsOfCallsUDP: many goroutines over several sessions, real UDP.
func TestThousandsOfCallsUDP(t *testing.T) {
	checkLeaks(t)
	n := udpNet{}
	var handled atomic.Int64
	srv := n.Listen(t, serverWith(t, "Inc", func(_ context.Context, req []byte) ([]byte, error) {
		handled.Add(1)
		for i := range req {
			req[i]++
		}
		return req, nil
	}))
	cli := n.Listen(t, nil)
	var sessions []*erpc.Session
	for range 4 {
		sessions = append(sessions, dialT(t, n, cli, srv))
	}
	const goroutines, calls = 100, 50
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := range goroutines {
		wg.Go(func() {
			s := sessions[g%len(sessions)]
			for i := range calls {
				req := fmt.Appendf(nil, "g%d-c%d", g, i)
				resp, err := s.Call(context.Background(), "Inc", req, nil)
				if err != nil || len(resp) != len(req) || resp[0] != req[0]+1 {
					failed.Add(1)
					t.Errorf("g%d call %d: %q %v", g, i, resp, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 || handled.Load() != goroutines*calls {
		t.Fatalf("%d failures, %d handled of %d", failed.Load(), handled.Load(), goroutines*calls)
	}
}

// TestNestedCalls: client -> A -> B, as eRPC's req_in_req test: A answers
// only after its own call to B returns, and each hop adds one to every
// byte, so the reply proves both ran. A runs inline (continuation on the
// loop) and, in the second case, in the background (a blocking call).
func TestNestedCalls(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	b := n.Listen(t, serverWith(t, "Inc", func(_ context.Context, req []byte) ([]byte, error) {
		for i := range req {
			req[i]++
		}
		return req, nil
	}))
	// A's handlers call B through a session of A's own endpoint, dialed
	// once A serves and before any client calls it.
	var toB *erpc.Session
	aSrv := erpc.NewServer()
	aSrv.HandleRaw("Via", func(r erpc.Request) {
		toB.Go("Inc", r.Data(), nil, func(resp []byte, err error) {
			if err != nil {
				r.RespondError(err)
				return
			}
			for i := range resp {
				resp[i]++
			}
			r.Respond(resp)
		})
	})
	aSrv.Handle("ViaBlocking", func(ctx context.Context, req []byte) ([]byte, error) {
		resp, err := toB.Call(ctx, "Inc", req, nil)
		for i := range resp {
			resp[i]++
		}
		return resp, err
	}, erpc.Background())
	a := n.Listen(t, aSrv)
	toB = dialT(t, n, a, b)
	s := dialT(t, n, n.Listen(t, nil), a)
	for _, method := range []string{"Via", "ViaBlocking"} {
		for i := range 33 { // more than a window of nested calls
			resp, err := call(t, s, method, []byte{byte(i), byte(i + 1)})
			if err != nil || !bytes.Equal(resp, []byte{byte(i + 2), byte(i + 3)}) {
				t.Fatalf("%s %d: %v %v", method, i, resp, err)
			}
		}
	}
}

func TestHandlerPanicIsInternal(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	h := erpc.NewServer()
	h.Handle("Boom", func(context.Context, []byte) ([]byte, error) { panic("kaboom") })
	h.Handle("BoomBG", func(context.Context, []byte) ([]byte, error) { panic("kaboom") }, erpc.Background())
	h.Handle("Echo", echoHandler)
	srv := n.Listen(t, h, erpc.WithLogger(slog.New(slog.DiscardHandler)))
	s := dialT(t, n, n.Listen(t, nil), srv)
	for _, m := range []string{"Boom", "BoomBG"} {
		_, err := call(t, s, m, nil)
		if !errors.Is(err, erpc.ErrInternal) || !strings.Contains(err.Error(), "kaboom") {
			t.Fatalf("%s: %v, want Internal mentioning the panic", m, err)
		}
	}
	if resp, err := call(t, s, "Echo", []byte("alive")); err != nil || string(resp) != "alive" {
		t.Fatalf("endpoint after panics: %q %v", resp, err)
	}
}

func TestUnimplementedAndErrors(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	h := erpc.NewServer()
	h.Handle("Fail", func(context.Context, []byte) ([]byte, error) {
		return nil, erpc.Errorf(erpc.NotFound, "no such key %q", "k")
	})
	h.Handle("Plain", func(context.Context, []byte) ([]byte, error) { return nil, errors.New("plain failure") })
	if err := h.Handle("Fail", echoHandler); err == nil {
		t.Fatal("a method was registered twice")
	}
	srv := n.Listen(t, h)
	s := dialT(t, n, n.Listen(t, nil), srv)
	_, err := call(t, s, "Nope", nil)
	if erpc.CodeOf(err) != erpc.Unimplemented || !errors.Is(err, erpc.ErrUnimplemented) {
		t.Fatalf("unknown method: %v", err)
	}
	_, err = call(t, s, "Fail", nil)
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.NotFound || e.Msg != `no such key "k"` {
		t.Fatalf("coded error: %#v", err)
	}
	if _, err = call(t, s, "Plain", nil); erpc.CodeOf(err) != erpc.Unknown || !strings.Contains(err.Error(), "plain failure") {
		t.Fatalf("plain error: %v", err)
	}
}

// TestDeadlineAndCancel: a call whose context ends fails with the matching
// code at once, and the server's handler sees its context canceled.
func TestDeadlineAndCancel(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	canceled := make(chan struct{}, 4)
	h := erpc.NewServer()
	h.Handle("Echo", echoHandler)
	h.Handle("Wait", func(ctx context.Context, req []byte) ([]byte, error) {
		select {
		case <-ctx.Done():
			canceled <- struct{}{}
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return req, nil
		}
	}, erpc.Background())
	srv := n.Listen(t, h)
	s := dialT(t, n, n.Listen(t, nil), srv)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Call(ctx, "Wait", []byte("x"), nil)
	if !errors.Is(err, context.DeadlineExceeded) || erpc.CodeOf(err) != erpc.DeadlineExceeded {
		t.Fatalf("deadline: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("deadline of 30ms returned after %v", d)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(30 * time.Millisecond); cancel2() }()
	if _, err := s.Call(ctx2, "Wait", []byte("y"), nil); !errors.Is(err, context.Canceled) || erpc.CodeOf(err) != erpc.Canceled {
		t.Fatalf("cancel: %v", err)
	}
	for i := range 2 {
		select {
		case <-canceled:
		case <-time.After(5 * time.Second):
			t.Fatalf("server handler %d never saw its context canceled", i)
		}
	}
	// The session is still usable.
	if resp, err := call(t, s, "Echo", []byte("ok")); err != nil || string(resp) != "ok" {
		t.Fatalf("after cancellations: %q %v", resp, err)
	}
}

// TestServerStoppedAndRestarted: a server that stops makes pending calls
// fail with Unavailable within the failure timeout; restarted on the same
// address, it serves new calls on the same session.
func TestServerStoppedAndRestarted(t *testing.T) {
	checkLeaks(t)
	srv, err := serverWith(t, "Slow", func(ctx context.Context, req []byte) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, erpc.Background()).Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	const failure = 300 * time.Millisecond
	cli := udpNet{}.Listen(t, nil, erpc.WithFailureTimeout(failure))
	s, err := cli.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "Slow", []byte("x"), nil)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	// Stop the server without telling anyone: its socket just goes away.
	stopped := time.Now()
	srv.Close()
	select {
	case err := <-done:
		if !errors.Is(err, erpc.ErrUnavailable) {
			t.Fatalf("pending call: %v, want Unavailable", err)
		}
		if d := time.Since(stopped); d > failure+time.Second {
			t.Fatalf("pending call failed %v after the server stopped; failure timeout %v", d, failure)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pending call never failed")
	}

	srv2, err := serverWith(t, "Echo", echoHandler).Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if resp, err := call(t, s, "Echo", []byte("hello again")); err != nil || string(resp) != "hello again" {
		t.Fatalf("first call after the restart: %q %v", resp, err)
	}
}

// TestRestartWithoutPendingCalls: the server restarts while the session is
// idle; the next call provably never reached the old server, so it goes
// out again on a new session and succeeds.
func TestRestartWithoutPendingCalls(t *testing.T) {
	checkLeaks(t)
	h := serverWith(t, "Echo", echoHandler)
	srv, err := h.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	s := dialT(t, udpNet{}, udpNet{}.Listen(t, nil), srv)
	if _, err := call(t, s, "Echo", []byte("1")); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	srv2, err := h.Listen(addr) // one Server serves its restarted endpoint too
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if resp, err := call(t, s, "Echo", []byte("2")); err != nil || string(resp) != "2" {
		t.Fatalf("call after an unseen restart: %q %v", resp, err)
	}
}

// TestOverloadFailsFast: one worker and a queue of one: of many concurrent
// slow calls, the ones that find the queue full fail at once with
// ResourceExhausted, and the others succeed.
func TestOverloadFailsFast(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	srv := n.Listen(t, serverWith(t, "Slow", func(_ context.Context, req []byte) ([]byte, error) {
		time.Sleep(100 * time.Millisecond)
		return req, nil
	}, erpc.Background()), erpc.WithWorkers(1), erpc.WithQueueDepth(1))
	s := dialT(t, n, n.Listen(t, nil), srv)
	var wg sync.WaitGroup
	var ok, exhausted atomic.Int32
	var fastest atomic.Int64
	fastest.Store(int64(time.Hour))
	for range 8 {
		wg.Go(func() {
			start := time.Now()
			_, err := call(t, s, "Slow", []byte("x"))
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, erpc.ErrResourceExhausted):
				exhausted.Add(1)
				if d := int64(time.Since(start)); d < fastest.Load() {
					fastest.Store(d)
				}
			default:
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() < 2 || exhausted.Load() == 0 || ok.Load()+exhausted.Load() != 8 {
		t.Fatalf("%d ok, %d exhausted", ok.Load(), exhausted.Load())
	}
	if d := time.Duration(fastest.Load()); d > 50*time.Millisecond {
		t.Fatalf("refused calls took %v: they waited instead of failing fast", d)
	}
}

type point struct{ X, Y int32 }

func (p *point) MarshalBinary() ([]byte, error) {
	return []byte{byte(p.X), byte(p.Y)}, nil
}

func (p *point) UnmarshalBinary(b []byte) error {
	if len(b) != 2 {
		return fmt.Errorf("point: %d bytes", len(b))
	}
	p.X, p.Y = int32(b[0]), int32(b[1])
	return nil
}

func TestTypedAPI(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	h := erpc.NewServer()
	if err := erpc.Register(h, "Greet", func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return wrapperspb.String("hello, " + req.GetValue()), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := erpc.Register(h, "Mirror", func(_ context.Context, p *point) (*point, error) {
		return &point{X: p.Y, Y: p.X}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := erpc.Register(h, "Len", func(_ context.Context, b *[]byte) (*wrapperspb.Int64Value, error) {
		return wrapperspb.Int64(int64(len(*b))), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := erpc.Register(h, "Bad", func(context.Context, *struct{}) (*struct{}, error) { return nil, nil }); err == nil {
		t.Fatal("registered a type without a codec")
	}
	srv := n.Listen(t, h)
	s := dialT(t, n, n.Listen(t, nil), srv)
	ctx := context.Background()
	g, err := erpc.Invoke[wrapperspb.StringValue](ctx, s, "Greet", wrapperspb.String("erpc"))
	if err != nil || g.GetValue() != "hello, erpc" {
		t.Fatalf("proto: %v %v", g, err)
	}
	p, err := erpc.Invoke[point](ctx, s, "Mirror", &point{1, 2})
	if err != nil || *p != (point{2, 1}) {
		t.Fatalf("binary: %v %v", p, err)
	}
	raw := []byte("12345")
	l, err := erpc.Invoke[wrapperspb.Int64Value](ctx, s, "Len", &raw)
	if err != nil || l.GetValue() != 5 {
		t.Fatalf("raw: %v %v", l, err)
	}
	// A request the handler's codec cannot decode.
	if _, err := s.Call(ctx, "Mirror", []byte{1, 2, 3}, nil); erpc.CodeOf(err) != erpc.InvalidArgument {
		t.Fatalf("undecodable request: %v", err)
	}
}

// TestShutdownDrains: Shutdown lets a call in flight finish, refuses new
// ones, and then closes.
func TestShutdownDrains(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	release := make(chan struct{})
	srv := n.Listen(t, serverWith(t, "Hold", func(_ context.Context, req []byte) ([]byte, error) {
		<-release
		return req, nil
	}, erpc.Background()))
	s := dialT(t, n, n.Listen(t, nil), srv)
	done := make(chan error, 1)
	go func() {
		resp, err := call(t, s, "Hold", []byte("finished"))
		if err == nil && string(resp) != "finished" {
			err = fmt.Errorf("response %q", resp)
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	if _, err := call(t, s, "Hold", nil); !errors.Is(err, erpc.ErrUnavailable) {
		t.Fatalf("new call while draining: %v, want Unavailable", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with a call in flight", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("call in flight during Shutdown: %v", err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestPackageDial(t *testing.T) {
	checkLeaks(t)
	srv := udpNet{}.Listen(t, serverWith(t, "Echo", echoHandler))
	s, err := erpc.Dial(context.Background(), srv.Target())
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := call(t, s, "Echo", []byte("hi")); err != nil || string(resp) != "hi" {
		t.Fatalf("%q %v", resp, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := erpc.Dial(context.Background(), "bogus://x"); err == nil {
		t.Fatal("dialed an unknown scheme")
	}
}

// TestInjectedLoss: both endpoints drop 10 % of what they send; calls of
// every size still complete, exactly once.
func TestInjectedLoss(t *testing.T) {
	checkLeaks(t)
	n := udpNet{}
	lossy := func(seed uint64) erpc.Option {
		tr, err := faults.UDP("127.0.0.1:0", 0.1, seed)
		if err != nil {
			t.Fatal(err)
		}
		return erpc.WithTransport(tr)
	}
	var runs atomic.Int64
	srv := n.Listen(t, serverWith(t, "Echo", func(_ context.Context, req []byte) ([]byte, error) {
		runs.Add(1)
		return req, nil
	}), lossy(1))
	cli := n.Listen(t, nil, lossy(2))
	s := dialT(t, n, cli, srv)
	for i, size := range []int{0, 32, 2000, 50000, 1 << 20} {
		req := bytes.Repeat([]byte{byte(i + 1)}, size)
		resp, err := call(t, s, "Echo", req)
		if err != nil || !bytes.Equal(resp, req) {
			t.Fatalf("%d bytes: %v", size, err)
		}
	}
	if runs.Load() != 5 {
		t.Fatalf("handlers ran %d times for 5 calls", runs.Load())
	}
	if st := cli.Stats(); st.Retransmits == 0 {
		t.Fatal("no retransmission: no loss was injected")
	}
}
