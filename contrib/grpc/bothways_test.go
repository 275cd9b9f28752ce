package erpcgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/codec/protocodec"
	erpcgrpc "github.com/erpc-go/erpc/contrib/grpc"
)

// failures is what the Fail handler returns, by request: real gRPC status
// errors of every code, with details (one under an unusual type URL), and
// a wrapped one.
func failures(t *testing.T) map[string]error {
	rng := rand.New(rand.NewPCG(29, 5))
	out := map[string]error{}
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		msg := fmt.Sprintf("%v failure %x", c, rng.Uint64())
		st, err := status.New(c, msg).WithDetails(badRequest,
			&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(rng.Int64N(1e9)))})
		if err != nil {
			t.Fatal(err)
		}
		p := st.Proto()
		raw, _ := proto.Marshal(badRequest)
		p.Details = append(p.Details, &anypb.Any{TypeUrl: "example.com/types/google.rpc.BadRequest", Value: raw})
		out[c.String()] = status.FromProto(p).Err()
	}
	out["wrapped"] = fmt.Errorf("lookup: %w", status.Error(codes.NotFound, "no row"))
	return out
}

func fail(errs map[string]error) func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	return func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return nil, errs[req.GetValue()]
	}
}

// serveGRPC serves Fail over gRPC with no interceptor and returns a client
// connection.
func serveGRPC(t *testing.T, h func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error)) *grpc.ClientConn {
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	gs.RegisterService(&grpc.ServiceDesc{
		ServiceName: "test.Failer",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Fail", Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
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

// serveERPC serves Fail over erpc with no interceptor and dials it twice:
// plain, and with ERPCClientInterceptor.
func serveERPC(t *testing.T, ctx context.Context, h func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error)) (plain, withStatus *erpc.Session) {
	srv := erpc.NewServer()
	if err := erpc.Register(srv, "Fail", h); err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://bothways-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	dial := func(opts ...erpc.Option) *erpc.Session {
		s, err := erpc.Dial(ctx, ep.Target(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return dial(), dial(erpc.WithUnaryClientInterceptors(erpcgrpc.ERPCClientInterceptor()))
}

// TestStatusBothWaysNoServerInterceptor: one handler returning real gRPC
// status errors, served over gRPC and over erpc with no interceptor on
// either server, gives callers of both the same code, message and details:
// the erpc caller's *erpc.Error field by field, erpcgrpc.FromError's
// status, and grpc's own status.FromError once ERPCClientInterceptor is on.
func TestStatusBothWaysNoServerInterceptor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := failures(t)
	conn := serveGRPC(t, fail(errs))
	plain, withStatus := serveERPC(t, ctx, fail(errs))
	for key := range errs {
		gerr := conn.Invoke(ctx, "/test.Failer/Fail", wrapperspb.String(key), new(wrapperspb.StringValue))
		gst, ok := status.FromError(gerr)
		if !ok || gst.Code() == codes.OK {
			t.Fatalf("%s over gRPC: %v", key, gerr)
		}
		want := gst.Proto()

		_, err := erpc.Invoke[wrapperspb.StringValue](ctx, plain, "Fail", wrapperspb.String(key))
		var e *erpc.Error
		if !errors.As(err, &e) || uint32(e.Code) != uint32(gst.Code()) || erpc.CodeOf(err) != e.Code {
			t.Fatalf("%s over erpc: %v, want code %d", key, err, gst.Code())
		}
		if !sameMessage(e.Code, e.Msg, want.GetMessage()) {
			t.Fatalf("%s over erpc: message %q, want %q", key, e.Msg, want.GetMessage())
		}
		if len(e.Details) != len(want.GetDetails()) {
			t.Fatalf("%s over erpc: %d details, want %d", key, len(e.Details), len(want.GetDetails()))
		}
		for i, d := range want.GetDetails() {
			got := e.Details[i]
			if "type.googleapis.com/"+got.Type != d.GetTypeUrl() && got.Type != d.GetTypeUrl() || string(got.Value) != string(d.GetValue()) {
				t.Fatalf("%s detail %d: %q %x, want %q %x", key, i, got.Type, got.Value, d.GetTypeUrl(), d.GetValue())
			}
		}
		if ds, derr := protocodec.Details(err); derr != nil || len(ds) != len(e.Details) {
			t.Fatalf("%s: protocodec.Details = %v, %v", key, ds, derr)
		}

		// grpc's own status.FromError cannot see an *erpc.Error: the
		// method it looks for can only be defined in a package that
		// imports grpc (FromError below, or the client interceptor).
		if _, ok := status.FromError(err); ok {
			t.Fatalf("%s: status.FromError read an *erpc.Error; the package doc says it cannot", key)
		}
		st, ok := erpcgrpc.FromError(err)
		checkStatus(t, key+" FromError", st, ok, want)
		if erpcgrpc.Code(err) != gst.Code() {
			t.Fatalf("%s: erpcgrpc.Code = %v, want %v", key, erpcgrpc.Code(err), gst.Code())
		}

		_, err = erpc.Invoke[wrapperspb.StringValue](ctx, withStatus, "Fail", wrapperspb.String(key))
		st, ok = status.FromError(err)
		checkStatus(t, key+" with ERPCClientInterceptor", st, ok, want)
		if status.Code(err) != gst.Code() || erpc.CodeOf(err) != erpc.Code(gst.Code()) || !errors.As(err, &e) {
			t.Fatalf("%s with ERPCClientInterceptor: status.Code %v, erpc.CodeOf %v", key, status.Code(err), erpc.CodeOf(err))
		}
	}
}

// checkStatus fails unless st is want, field by field.
func checkStatus(t *testing.T, what string, st *status.Status, ok bool, want *spb.Status) {
	t.Helper()
	if !ok || st == nil {
		t.Fatalf("%s: no status", what)
	}
	got := st.Proto()
	if !sameMessage(erpc.Code(got.GetCode()), got.GetMessage(), want.GetMessage()) {
		t.Fatalf("%s: message %q, want %q", what, got.GetMessage(), want.GetMessage())
	}
	got.Message = want.GetMessage()
	if !proto.Equal(got, want) {
		t.Fatalf("%s: status %v, want %v", what, got, want)
	}
}

// sameMessage: the messages are equal, but for the name of the call ahead
// of the handler's message that an erpc caller's Canceled and
// DeadlineExceeded errors carry.
func sameMessage(code erpc.Code, got, want string) bool {
	if code == erpc.Canceled || code == erpc.DeadlineExceeded {
		return strings.HasPrefix(got, `call "Fail" to mem://`) && strings.HasSuffix(got, ": the server's handler: "+want)
	}
	return got == want
}

// TestFromErrorForms: FromError and Code on nil, plain and context errors,
// as grpc's status.FromError and status.Code treat them.
func TestFromErrorForms(t *testing.T) {
	if st, ok := erpcgrpc.FromError(nil); st != nil || !ok || erpcgrpc.Code(nil) != codes.OK {
		t.Fatalf("FromError(nil) = %v, %v", st, ok)
	}
	plain := errors.New("plain")
	if st, ok := erpcgrpc.FromError(plain); ok || st.Code() != codes.Unknown || st.Message() != "plain" {
		t.Fatalf("FromError(plain) = %v, %v", st, ok)
	}
	e := &erpc.Error{Code: erpc.DeadlineExceeded, Msg: "late", Cause: context.DeadlineExceeded}
	if st, ok := erpcgrpc.FromError(fmt.Errorf("call: %w", e)); !ok || st.Code() != codes.DeadlineExceeded || st.Message() != "late" {
		t.Fatalf("FromError(wrapped *erpc.Error) = %v, %v", st, ok)
	}
	gs := status.Error(codes.Aborted, "grpc's")
	if erpcgrpc.Code(gs) != codes.Aborted {
		t.Fatalf("Code(status error) = %v", erpcgrpc.Code(gs))
	}
}
