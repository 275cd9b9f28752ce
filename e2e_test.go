package erpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/erpc-go/erpc"
	_ "github.com/erpc-go/erpc/codec/protocodec"
	"github.com/erpc-go/erpc/transport/rpctest"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestConformanceMemnet(t *testing.T) {
	checkLeaks(t)
	rpctest.RunRPC(t, newMemNet())
}

func TestConformanceUDP(t *testing.T) {
	checkLeaks(t)
	rpctest.RunRPC(t, udpNet{})
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
