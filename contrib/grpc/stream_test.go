package erpcgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
	_ "github.com/erpc-go/erpc/codec/protocodec"
	erpcgrpc "github.com/erpc-go/erpc/contrib/grpc"
)

type sv = wrapperspb.StringValue

// serveStreams serves the stream handlers on a fresh erpc server and
// dials it.
func serveStreams(t *testing.T, handlers map[string]erpc.StreamHandler) (context.Context, *erpc.Session) {
	t.Helper()
	srv := erpc.NewServer()
	for name, h := range handlers {
		if err := srv.HandleStream(name, h); err != nil {
			t.Fatal(err)
		}
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://erpcgrpc-streams-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ctx, s
}

const bidiMethod = "/test.S/Bidi"

// bidi is a gRPC bidi handler that uses grpc's metadata functions on its
// stream's context, echoes each message, and fails with a status with a
// detail at "fail".
func bidi(s grpc.BidiStreamingServer[sv, sv]) error {
	ctx := s.Context()
	md, ok := metadata.FromIncomingContext(ctx)
	if m, _ := grpc.Method(ctx); !ok || m != bidiMethod {
		return status.Errorf(codes.Internal, "metadata %v, method %q", ok, m)
	}
	if err := grpc.SetHeader(ctx, metadata.Pairs("x-seen", strings.Join(md.Get("x-req"), ","))); err != nil {
		return err
	}
	if err := grpc.SendHeader(ctx, metadata.Pairs("x-sent", "yes")); err != nil {
		return err
	}
	if err := grpc.SetHeader(ctx, metadata.Pairs("x-late", "1")); err == nil {
		return status.Error(codes.Internal, "SetHeader after SendHeader worked")
	}
	for {
		m, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.Send(m); err != nil {
			return err
		}
		if m.Value == "fail" {
			if err := grpc.SetTrailer(ctx, metadata.Pairs("x-t", "1")); err != nil {
				return err
			}
			s.SetTrailer(metadata.Pairs("x-t", "2"))
			st, _ := status.New(codes.Aborted, "failed as asked").WithDetails(badRequest)
			return st.Err()
		}
	}
}

// TestStreamAdaptersTheGRPCWay: a handler written for gRPC's bidi stream,
// served over erpc through ServerStream, and a gRPC-shaped client through
// ClientStream: random messages (some of many packets) echo in order,
// request metadata, headers (grpc.SetHeader, grpc.SendHeader) and trailers
// (grpc.SetTrailer and the stream's SetTrailer) arrive, the grpc.Header
// and grpc.Trailer options are filled at the end, and the status error's
// code, message and detail read with status.FromError.
func TestStreamAdaptersTheGRPCWay(t *testing.T) {
	ctx, s := serveStreams(t, map[string]erpc.StreamHandler{
		bidiMethod: func(s erpc.ServerStream) error { return bidi(erpcgrpc.NewServerStream[sv, sv](s)) },
	})
	rng := rand.New(rand.NewPCG(29, 6))
	for round := range 5 {
		var h, tr metadata.MD
		cctx := metadata.AppendToOutgoingContext(ctx, "x-req", fmt.Sprint(round))
		var c grpc.BidiStreamingClient[sv, sv]
		c, err := erpcgrpc.OpenStream[sv, sv](cctx, s, bidiMethod, grpc.Header(&h), grpc.Trailer(&tr))
		if err != nil {
			t.Fatal(err)
		}
		n := rng.IntN(30)
		for i := range n {
			v := strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(1+(i%3)*50_000))
			if err := c.Send(wrapperspb.String(v)); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Recv(); err != nil || got.Value != v {
				t.Fatalf("round %d message %d: %d bytes, %v; want %d bytes", round, i, len(got.GetValue()), err, len(v))
			}
		}
		if hd, err := c.Header(); err != nil || hd.Get("x-seen")[0] != fmt.Sprint(round) || hd.Get("x-sent")[0] != "yes" || hd.Get("x-late") != nil {
			t.Fatalf("header %v, %v", hd, err)
		}
		if h != nil || tr != nil {
			t.Fatalf("call options filled before the end: %v %v", h, tr)
		}
		fail := round%2 == 0
		if fail {
			if err := c.Send(wrapperspb.String("fail")); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Recv(); err != nil || got.Value != "fail" {
				t.Fatalf("echo of fail: %v, %v", got, err)
			}
		}
		if err := c.CloseSend(); err != nil {
			t.Fatal(err)
		}
		_, err = c.Recv()
		if !fail {
			if err != io.EOF {
				t.Fatalf("end: %v, want io.EOF", err)
			}
		} else {
			st, ok := status.FromError(err)
			var e *erpc.Error
			if !ok || st.Code() != codes.Aborted || st.Message() != "failed as asked" || len(st.Details()) != 1 ||
				!proto.Equal(st.Details()[0].(proto.Message), badRequest) || !errors.As(err, &e) || e.Code != erpc.Aborted {
				t.Fatalf("end: %v (status %v)", err, st)
			}
			if got := strings.Join(c.Trailer().Get("x-t"), ","); got != "1,2" {
				t.Fatalf("trailer %v", c.Trailer())
			}
		}
		if h.Get("x-seen")[0] != fmt.Sprint(round) || strings.Join(tr.Get("x-t"), ",") != map[bool]string{true: "1,2"}[fail] {
			t.Fatalf("options: header %v, trailer %v", h, tr)
		}
	}
}

// TestStreamShapesEdges: a server-streaming handler whose client sent no
// request gets InvalidArgument without running; CloseAndRecv refuses a
// client-streaming handler that answered with no message or two.
func TestStreamShapesEdges(t *testing.T) {
	ran := 0
	sends := func(n int) erpc.StreamHandler {
		return func(s erpc.ServerStream) error {
			st := erpcgrpc.NewServerStream[sv, sv](s)
			for range n {
				if err := st.SendAndClose(wrapperspb.String("r")); err != nil {
					return err
				}
			}
			return nil
		}
	}
	ctx, s := serveStreams(t, map[string]erpc.StreamHandler{
		"/t.S/Watch": func(s erpc.ServerStream) error {
			return erpcgrpc.ServeServerStream(s, func(*sv, grpc.ServerStreamingServer[sv]) error { ran++; return nil })
		},
		"/t.S/None": sends(0), "/t.S/One": sends(1), "/t.S/Two": sends(2),
	})
	c, err := erpcgrpc.OpenStream[sv, sv](ctx, s, "/t.S/Watch")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recv(); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "no request message") || ran != 0 {
		t.Fatalf("no request: %v (ran %d)", err, ran)
	}
	for method, want := range map[string]string{"/t.S/None": "without a response", "/t.S/One": "", "/t.S/Two": "more than one response"} {
		c, err := erpcgrpc.OpenStream[sv, sv](ctx, s, method)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.CloseAndRecv()
		switch {
		case want == "" && (err != nil || got.GetValue() != "r"):
			t.Errorf("%s: %v, %v", method, got, err)
		case want != "" && (status.Code(err) != codes.Internal || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want Internal: %s", method, err, want)
		}
	}
}

func TestStatusError(t *testing.T) {
	plain := errors.New("plain")
	already := status.Error(codes.NotFound, "gone")
	for _, err := range []error{nil, io.EOF, plain, already} {
		if got := erpcgrpc.StatusError(err); got != err {
			t.Errorf("StatusError(%v) = %v, want it as it is", err, got)
		}
	}
	e := fmt.Errorf("call: %w", erpc.Errorf(erpc.DataLoss, "lost"))
	got := erpcgrpc.StatusError(e)
	var ee *erpc.Error
	if st, ok := status.FromError(got); !ok || st.Code() != codes.DataLoss || st.Message() != "lost" || !errors.As(got, &ee) || got.Error() != e.Error() {
		t.Errorf("StatusError(%v) = %v", e, got)
	}
}
