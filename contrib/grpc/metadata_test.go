package erpcgrpc_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
	erpcgrpc "github.com/erpc-go/erpc/contrib/grpc"
)

const metaMethod = "/test.Meta/Echo"

// metaImpl is ONE implementation written for gRPC: it reads the caller's
// metadata with metadata.FromIncomingContext (and hands what it saw to
// seen), sets headers with grpc.SetHeader and grpc.SendHeader, trailers
// with grpc.SetTrailer (one echoing each request key), and fails with a
// status when asked.
func metaImpl(seen chan<- metadata.MD) func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	return func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		md, ok := metadata.FromIncomingContext(ctx)
		if !ok {
			return nil, status.Error(codes.Internal, "no incoming metadata")
		}
		seen <- md
		if m, ok := grpc.Method(ctx); !ok || m != metaMethod {
			return nil, status.Errorf(codes.Internal, "grpc.Method = %q, %v", m, ok)
		}
		steps := []func() error{
			func() error { return grpc.SetHeader(ctx, metadata.Pairs("h-one", "a", "h-one", "b")) },
			func() error { return grpc.SetHeader(ctx, metadata.MD{"blob-bin": {"\x00\xff\x80", ""}}) },
			func() error { return grpc.SendHeader(ctx, metadata.Pairs("h-sent", "yes")) },
			func() error { return grpc.SetTrailer(ctx, metadata.Pairs("t-cost", "17")) },
			func() error { return grpc.SetTrailer(ctx, metadata.MD{"t-bin": {"\x01\x00\x02"}}) },
		}
		for k, vs := range md {
			if !transportKey(k) {
				steps = append(steps, func() error { return grpc.SetTrailer(ctx, metadata.MD{"echo-" + k: vs}) })
			}
		}
		for i, step := range steps {
			if err := step(); err != nil {
				return nil, status.Errorf(codes.Internal, "step %d: %v", i, err)
			}
		}
		// The headers are sent: gRPC refuses more, and so does erpc.
		if err := grpc.SetHeader(ctx, metadata.Pairs("h-late", "1")); err == nil {
			return nil, status.Error(codes.Internal, "SetHeader after SendHeader worked")
		}
		if req.GetValue() == "fail" {
			return nil, status.Error(codes.FailedPrecondition, "failing as asked")
		}
		return wrapperspb.String("echo " + req.GetValue()), nil
	}
}

// transportKey: a key gRPC's transport adds by itself, which erpc has no
// use for (the package doc lists them).
func transportKey(k string) bool {
	return strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") || k == "content-type" || k == "user-agent"
}

func userKeys(md metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, vs := range md {
		if !transportKey(k) {
			out[k] = vs
		}
	}
	return out
}

// TestMetadataBothWays: ONE gRPC implementation served over real gRPC
// (bufconn) and over erpc (with ServerMetadata): for the same call, with
// the same request metadata set the gRPC way, the handler sees the same
// request metadata, and the caller gets the same headers, trailers and
// answer (or status), field by field: the gRPC caller through
// grpc.Header and grpc.Trailer, the erpc caller through CallContext with
// the same options and through erpc.WithResponseMetadata. Over gRPC
// only the transport's own keys are extra.
func TestMetadataBothWays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := make(chan metadata.MD, 1)
	impl := metaImpl(seen)
	conn := serveGRPCMethod(t, "test.Meta", "Echo", impl)
	srv := erpc.NewServer(erpc.ChainUnaryInterceptor(erpcgrpc.ServerMetadata()))
	if err := erpc.Register(srv, metaMethod, impl); err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://meta-bothways-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	for _, req := range []string{"hello", "fail"} {
		callCtx := metadata.AppendToOutgoingContext(ctx, "x-trace", "t-1", "multi", "1", "multi", "2", "key-bin", "\x00\x01\xfe")
		var gh, gt metadata.MD
		gresp := new(wrapperspb.StringValue)
		gerr := conn.Invoke(callCtx, metaMethod, wrapperspb.String(req), gresp, grpc.Header(&gh), grpc.Trailer(&gt))
		gseen := <-seen

		var eh, et metadata.MD
		eresp, eerr := erpc.Invoke[wrapperspb.StringValue](erpcgrpc.CallContext(callCtx, grpc.Header(&eh), grpc.Trailer(&et)),
			s, metaMethod, wrapperspb.String(req))
		eseen := <-seen

		what := "request " + req
		est, _ := erpcgrpc.FromError(eerr)
		if status.Code(gerr) != est.Code() || gerr != nil && status.Convert(gerr).Message() != est.Message() {
			t.Fatalf("%s: gRPC %v, erpc %v", what, gerr, eerr)
		}
		if gerr == nil && gresp.GetValue() != eresp.GetValue() {
			t.Fatalf("%s: gRPC answered %q, erpc %q", what, gresp.GetValue(), eresp.GetValue())
		}
		sameMD(t, what+": request metadata the handler saw", userKeys(gseen), eseen)
		sameMD(t, what+": headers", userKeys(gh), eh)
		sameMD(t, what+": trailers", userKeys(gt), et)
		if slices.Compare(eh.Get("h-sent"), []string{"yes"}) != 0 || slices.Compare(et.Get("echo-key-bin"), []string{"\x00\x01\xfe"}) != 0 || len(eh["h-one"]) != 2 {
			t.Fatalf("%s: headers %v trailers %v miss what the handler set", what, eh, et)
		}

		// The core API sees the same.
		var ch, ct erpc.Metadata
		_, err := erpc.Invoke[wrapperspb.StringValue](erpcgrpc.CallContext(callCtx), s, metaMethod, wrapperspb.String(req), erpc.Header(&ch), erpc.Trailer(&ct))
		<-seen
		if erpcgrpc.Code(err) != status.Code(gerr) {
			t.Fatalf("%s through the core API: %v", what, err)
		}
		sameMD(t, what+": core headers", userKeys(gh), metadata.MD(ch))
		sameMD(t, what+": core trailers", userKeys(gt), metadata.MD(ct))
	}
}

// sameMD fails unless got is want, key by key and value by value.
func sameMD(t *testing.T, what string, want, got metadata.MD) {
	t.Helper()
	if !maps.EqualFunc(want, got, slices.Equal) {
		t.Fatalf("%s: gRPC %q, erpc %q", what, want, got)
	}
	if len(want) == 0 {
		t.Fatalf("%s: empty on both: the test compares nothing", what)
	}
}

// TestCallContextOptions: CallContext clears what grpc.Header and
// grpc.Trailer point to, so an answer without metadata leaves them nil
// (as gRPC sets them after every call), ignores other options, and
// ClientMetadata sends grpc's outgoing metadata from an interceptor.
func TestCallContextOptions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan erpc.Metadata, 1)
	srv := erpc.NewServer()
	srv.Handle("Plain", func(ctx context.Context, req []byte) ([]byte, error) {
		md, _ := erpc.IncomingMetadata(ctx)
		got <- md
		return req, nil
	})
	ep, err := srv.Listen(fmt.Sprintf("mem://meta-options-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	s, err := erpc.Dial(ctx, ep.Target(), erpc.WithUnaryClientInterceptors(erpcgrpc.ClientMetadata()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, tr := metadata.Pairs("stale", "1"), metadata.Pairs("stale", "2")
	callCtx := erpcgrpc.CallContext(ctx, grpc.Header(&h), grpc.Trailer(&tr), grpc.WaitForReady(true), grpc.MaxCallRecvMsgSize(10))
	if _, err := s.Call(callCtx, "Plain", []byte("x"), nil); err != nil || h != nil || tr != nil {
		t.Fatalf("no metadata answered: %v, header %v trailer %v", err, h, tr)
	}
	<-got
	out := metadata.AppendToOutgoingContext(erpc.AppendToOutgoingContext(ctx, "erpc-key", "e"), "grpc-style", "g")
	if _, err := s.Call(out, "Plain", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if md := <-got; md.Get("grpc-style") != "g" || md.Get("erpc-key") != "e" {
		t.Fatalf("the handler saw %v", md)
	}
}

// serveGRPCMethod serves the unary method service/method with h over
// gRPC with no interceptor and returns a client connection.
func serveGRPCMethod(t *testing.T, service, method string, h func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error)) *grpc.ClientConn {
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	gs.RegisterService(&grpc.ServiceDesc{
		ServiceName: service,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: method, Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := new(wrapperspb.StringValue)
			if err := dec(req); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}}},
	}, struct{}{})
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
