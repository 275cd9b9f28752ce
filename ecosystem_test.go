package erpc_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/codec"
	"github.com/erpc-go/erpc/codec/protocodec"
)

// TestInterceptors: server and client chains run in order, outermost
// first, around Handle and Register handlers and around Call and Invoke;
// they can add and read metadata; the caller's deadline and cancellation
// reach the handler through them.
func TestInterceptors(t *testing.T) {
	checkLeaks(t)
	var mu sync.Mutex
	var trace []string
	note := func(s string) { mu.Lock(); trace = append(trace, s); mu.Unlock() }
	server := func(name string) erpc.UnaryServerInterceptor {
		return func(ctx context.Context, req any, info *erpc.UnaryServerInfo, next erpc.UnaryHandler) (any, error) {
			md, _ := erpc.IncomingMetadata(ctx)
			note(name + ">" + info.Method + ":" + strings.Join(md["from"], ","))
			resp, err := next(ctx, req)
			note(name + "<")
			return resp, err
		}
	}
	client := func(name string) erpc.UnaryClientInterceptor {
		return func(ctx context.Context, method string, req, resp any, s *erpc.Session, invoke erpc.UnaryInvoker) error {
			note(name + ">" + method)
			ctx = erpc.AppendToOutgoingContext(ctx, "from", name)
			err := invoke(ctx, method, req, resp)
			note(name + "<")
			return err
		}
	}
	n := newMemNet()
	h := erpc.NewServer(erpc.ChainUnaryInterceptor(server("s1"), server("s2")))
	h.Handle("Echo", echoHandler)
	hadDeadline := make(chan bool, 2)
	h.Handle("Wait", func(ctx context.Context, req []byte) ([]byte, error) {
		_, ok := ctx.Deadline()
		hadDeadline <- ok
		<-ctx.Done()
		return nil, ctx.Err()
	}, erpc.Background())
	erpc.Register(h, "Greet", func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return wrapperspb.String("hi " + req.GetValue()), nil
	})
	srv := n.Listen(t, h)
	cli := n.Listen(t, nil, erpc.WithUnaryClientInterceptors(client("c1"), client("c2")))
	s := dialT(t, n, cli, srv)

	if resp, err := call(t, s, "Echo", []byte("x")); err != nil || string(resp) != "x" {
		t.Fatalf("echo through interceptors: %q %v", resp, err)
	}
	want := "c1>Echo c2>Echo s1>Echo:c1,c2 s2>Echo:c1,c2 s2< s1< c2< c1<"
	if got := strings.Join(trace, " "); got != want {
		t.Fatalf("order:\n got %s\nwant %s", got, want)
	}
	trace = nil
	g, err := erpc.Invoke[wrapperspb.StringValue](context.Background(), s, "Greet", wrapperspb.String("you"))
	if err != nil || g.GetValue() != "hi you" || !strings.Contains(strings.Join(trace, " "), "s1>Greet:c1,c2") {
		t.Fatalf("typed call through interceptors: %v %v %v", g, err, trace)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Call(ctx, "Wait", nil, nil); !errors.Is(err, context.DeadlineExceeded) || !<-hadDeadline {
		t.Fatalf("deadline through interceptors: %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel2)
	if _, err := s.Call(ctx2, "Wait", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel through interceptors: %v", err)
	}
}

// TestStatusDetails: protobuf messages attached to a handler's error reach
// the caller, decoded.
func TestStatusDetails(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	h := erpc.NewServer()
	h.Handle("Fail", func(context.Context, []byte) ([]byte, error) {
		e, err := protocodec.ErrorWithDetails(erpc.ResourceExhausted, "slow down",
			durationpb.New(3*time.Second), wrapperspb.String("quota"))
		if err != nil {
			return nil, err
		}
		return nil, e
	})
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, h))
	_, err := call(t, s, "Fail", nil)
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.ResourceExhausted || e.Msg != "slow down" {
		t.Fatalf("error: %#v", err)
	}
	ds, derr := protocodec.Details(err)
	if derr != nil || len(ds) != 2 || ds[0].(*durationpb.Duration).AsDuration() != 3*time.Second ||
		!proto.Equal(ds[1], wrapperspb.String("quota")) {
		t.Fatalf("details: %v %v", ds, derr)
	}
}

// recordingStats keeps what a StatsHandler is told.
type recordingStats struct {
	mu       sync.Mutex
	begins   []erpc.CallInfo
	ends     []erpc.CallEnd
	sessions []erpc.SessionEvent
}

type spanKey struct{}

func (r *recordingStats) CallBegin(ctx context.Context, info erpc.CallInfo) context.Context {
	r.mu.Lock()
	r.begins = append(r.begins, info)
	r.mu.Unlock()
	return context.WithValue(ctx, spanKey{}, "span:"+info.Method)
}

func (r *recordingStats) CallEnd(ctx context.Context, info erpc.CallInfo, end erpc.CallEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Value(spanKey{}) != "span:"+info.Method {
		end.Code = 99 // CallEnd must get CallBegin's context
	}
	r.ends = append(r.ends, end)
}

func (r *recordingStats) SessionEvent(ev erpc.SessionEvent) {
	r.mu.Lock()
	r.sessions = append(r.sessions, ev)
	r.mu.Unlock()
}

// TestStatsHandler: both ends tell their StatsHandler of each call (method,
// sizes, code, duration) and of sessions up and down; the server's handler
// context carries what CallBegin returned.
func TestStatsHandler(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	var srvStats, cliStats recordingStats
	spans := make(chan any, 2)
	h := erpc.NewServer()
	h.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) {
		spans <- ctx.Value(spanKey{})
		return req, nil
	})
	h.Handle("Fail", func(context.Context, []byte) ([]byte, error) { return nil, erpc.Errorf(erpc.NotFound, "no") })
	srv := n.Listen(t, h, erpc.WithStatsHandler(&srvStats))
	cli := n.Listen(t, nil, erpc.WithStatsHandler(&cliStats))
	s := dialT(t, n, cli, srv)
	if _, err := call(t, s, "Echo", make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	call(t, s, "Fail", []byte("x"))
	done := make(chan error, 1)
	s.Go("Echo", []byte("async"), nil, func(_ []byte, err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if sp := <-spans; sp != "span:Echo" {
		t.Fatalf("the handler's context has %v, not CallBegin's value", sp)
	}
	s.Close()
	time.Sleep(50 * time.Millisecond) // the server hears of the close
	for _, c := range []struct {
		name string
		r    *recordingStats
	}{{"client", &cliStats}, {"server", &srvStats}} {
		c.r.mu.Lock()
		if len(c.r.begins) != 3 || len(c.r.ends) != 3 {
			t.Fatalf("%s: %d begins, %d ends", c.name, len(c.r.begins), len(c.r.ends))
		}
		if b := c.r.begins[0]; b.Method != "Echo" || b.ReqBytes != 100 || b.Server != (c.name == "server") || !b.Peer.IsValid() ||
			(c.name == "client" && b.Target != s.Target()) || s.Target() == "" {
			t.Fatalf("%s: begin %+v", c.name, b)
		}
		if e := c.r.ends[0]; e.Code != erpc.OK || e.RespBytes != 100 || e.Duration <= 0 {
			t.Fatalf("%s: end %+v", c.name, e)
		}
		if e := c.r.ends[1]; e.Code != erpc.NotFound || e.Err == nil {
			t.Fatalf("%s: failed call's end %+v", c.name, e)
		}
		ss := c.r.sessions
		if len(ss) != 2 || !ss[0].Up || ss[1].Up || ss[0].Server != (c.name == "server") || ss[1].Server != ss[0].Server ||
			ss[0].ID != ss[1].ID || ss[1].ConnectFailed {
			t.Fatalf("%s: sessions %+v", c.name, ss)
		}
		c.r.mu.Unlock()
	}
}

// TestStatsFailedDial: a dial that never connects reports one down event,
// marked ConnectFailed (so a gauge of open sessions, which saw no up, does
// not go negative).
func TestStatsFailedDial(t *testing.T) {
	checkLeaks(t)
	var st recordingStats
	cli := listenT(t, nil, "127.0.0.1:0", erpc.WithStatsHandler(&st))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := cli.Dial(ctx, "127.0.0.1:1"); err == nil { // nothing listens on port 1
		t.Fatal("dial to a closed port succeeded")
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		st.mu.Lock()
		ss := append([]erpc.SessionEvent(nil), st.sessions...)
		st.mu.Unlock()
		if len(ss) == 1 && !ss[0].Up && ss[0].ConnectFailed && !ss[0].Server {
			return
		}
		if len(ss) > 1 || time.Now().After(deadline) {
			t.Fatalf("session events %+v; want one down with ConnectFailed", ss)
		}
	}
}

// nopStats is the cheapest StatsHandler, to measure what the hooks cost.
type nopStats struct{}

func (nopStats) CallBegin(ctx context.Context, _ erpc.CallInfo) context.Context { return ctx }
func (nopStats) CallEnd(context.Context, erpc.CallInfo, erpc.CallEnd)           {}
func (nopStats) SessionEvent(erpc.SessionEvent)                                 {}

// BenchmarkCallHooks: a 32-byte call over memnet with no hook, with a
// StatsHandler that does nothing, and with a client and a server
// interceptor that do nothing: what each costs by itself.
func BenchmarkCallHooks(b *testing.B) {
	nopServer := func(ctx context.Context, req any, _ *erpc.UnaryServerInfo, next erpc.UnaryHandler) (any, error) {
		return next(ctx, req)
	}
	nopClient := func(ctx context.Context, method string, req, resp any, _ *erpc.Session, invoke erpc.UnaryInvoker) error {
		return invoke(ctx, method, req, resp)
	}
	for _, c := range []struct {
		name          string
		sopts         []erpc.ServerOption
		srvOpt, cliOp []erpc.Option
	}{
		{"none", nil, nil, nil},
		{"stats", nil, []erpc.Option{erpc.WithStatsHandler(nopStats{})}, []erpc.Option{erpc.WithStatsHandler(nopStats{})}},
		{"interceptors", []erpc.ServerOption{erpc.ChainUnaryInterceptor(nopServer)}, nil,
			[]erpc.Option{erpc.WithUnaryClientInterceptors(nopClient)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			n := newMemNet()
			h := erpc.NewServer(c.sopts...)
			h.Handle("Echo", echoHandler)
			t := &testing.T{}
			srv, err := h.Listen("", append(c.srvOpt, erpc.WithTransport(mustListen(t, n.net)))...)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			cli, err := erpc.Listen("", append(c.cliOp, erpc.WithTransport(mustListen(t, n.net)))...)
			if err != nil {
				b.Fatal(err)
			}
			defer cli.Close()
			s, err := cli.Dial(context.Background(), n.Target(srv))
			if err != nil {
				b.Fatal(err)
			}
			req, resp := make([]byte, 32), make([]byte, 0, 64)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if resp, err = s.Call(ctx, "Echo", req, resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestJSONCodec: a handler and a caller that agree on the JSON codec talk
// in JSON, with plain Go structs.
func TestJSONCodec(t *testing.T) {
	checkLeaks(t)
	type Sum struct{ A, B, Total int }
	n := newMemNet()
	h := erpc.NewServer()
	if err := erpc.Register(h, "Add", func(_ context.Context, s *Sum) (*Sum, error) {
		s.Total = s.A + s.B
		return s, nil
	}, erpc.WithCodec(codec.JSON{})); err != nil {
		t.Fatal(err)
	}
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, h))
	got, err := erpc.Invoke[Sum](context.Background(), s, "Add", &Sum{A: 2, B: 3}, erpc.WithCallCodec(codec.JSON{}))
	if err != nil || got.Total != 5 {
		t.Fatalf("JSON call: %+v %v", got, err)
	}
	raw, err := s.Call(context.Background(), "Add", []byte(`{"A":1,"B":1}`), nil)
	if err != nil || string(raw) != `{"A":1,"B":1,"Total":2}` {
		t.Fatalf("raw JSON call: %s %v", raw, err)
	}
}

// TestStatsRefusals: requests refused before a handler runs (an unknown
// method, a full queue) still reach the server's StatsHandler, begin and
// end, with the refusal's code.
func TestStatsRefusals(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	var st recordingStats
	b := newBlocker()
	srv := n.Listen(t, serverWith(t, "Work", b.handle, erpc.Background()),
		erpc.WithWorkers(1), erpc.WithQueueDepth(1), erpc.WithStatsHandler(&st))
	s := dialT(t, n, n.Listen(t, nil), srv)
	if _, err := call(t, s, "Nope", nil); erpc.CodeOf(err) != erpc.Unimplemented {
		t.Fatalf("unknown method: %v", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer b.free()
	wg.Go(func() { call(t, s, "Work", []byte("long")) })
	<-b.started
	wg.Go(func() { call(t, s, "Work", []byte("queued")) })
	waitHeld(t, srv, 2)
	if _, err := call(t, s, "Work", []byte("refused")); erpc.CodeOf(err) != erpc.ResourceExhausted {
		t.Fatalf("full queue: %v", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var codes []erpc.Code
	for i, e := range st.ends {
		codes = append(codes, e.Code)
		if e.Code != erpc.OK && (e.Err == nil || erpc.CodeOf(e.Err) != e.Code) {
			t.Errorf("end %d: %+v", i, e)
		}
	}
	if len(st.begins) != 4 || len(codes) != 2 || codes[0] != erpc.Unimplemented || codes[1] != erpc.ResourceExhausted {
		t.Fatalf("%d begins, ends with codes %v; want 4 begins (2 still running) and Unimplemented, ResourceExhausted", len(st.begins), codes)
	}
	if st.begins[0].Method != "" || st.begins[2].Method != "Work" {
		t.Fatalf("methods %q, %q", st.begins[0].Method, st.begins[2].Method)
	}
}
