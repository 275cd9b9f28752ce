package erpcgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/codec/protocodec"
	erpcgrpc "github.com/erpc-go/erpc/contrib/grpc"
)

var badRequest = &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
	{Field: "name", Description: "must not be empty"},
}}

func TestFromStatus(t *testing.T) {
	st, err := status.New(codes.InvalidArgument, "no name").WithDetails(badRequest)
	if err != nil {
		t.Fatal(err)
	}
	e := erpcgrpc.FromStatus(st)
	if e.Code != erpc.InvalidArgument || e.Msg != "no name" {
		t.Fatalf("FromStatus = %v", e)
	}
	if len(e.Details) != 1 || e.Details[0].Type != "google.rpc.BadRequest" {
		t.Fatalf("details %+v", e.Details)
	}
	ds, err := protocodec.Details(e)
	if err != nil || len(ds) != 1 || !proto.Equal(ds[0], badRequest) {
		t.Fatalf("protocodec.Details = %v, %v", ds, err)
	}
	// And back: the same status.
	if back := erpcgrpc.ToStatus(e); !proto.Equal(back.Proto(), st.Proto()) {
		t.Fatalf("ToStatus(FromStatus(st)) = %v, want %v", back.Proto(), st.Proto())
	}

	if e := erpcgrpc.FromStatus(status.New(codes.OK, "")); e != nil {
		t.Errorf("FromStatus(OK) = %v, want nil", e)
	}
	if e := erpcgrpc.FromStatus(status.New(codes.Code(42), "odd")); e.Code != erpc.Unknown || e.Msg != "odd" {
		t.Errorf("FromStatus(code 42) = %v, want Unknown", e)
	}
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		e := erpcgrpc.FromStatus(status.New(c, "m"))
		if e.Code.String() != c.String() {
			t.Errorf("code %v became %v", c, e.Code)
		}
		if got := erpcgrpc.ToStatus(e).Code(); got != c {
			t.Errorf("code %v came back as %v", c, got)
		}
	}
}

func TestToStatus(t *testing.T) {
	e, err := protocodec.ErrorWithDetails(erpc.NotFound, "no such user", badRequest)
	if err != nil {
		t.Fatal(err)
	}
	st := erpcgrpc.ToStatus(e)
	if st.Code() != codes.NotFound || st.Message() != "no such user" {
		t.Fatalf("ToStatus = %v", st)
	}
	ds := st.Details()
	if len(ds) != 1 {
		t.Fatalf("details %v", ds)
	}
	if d, ok := ds[0].(*errdetails.BadRequest); !ok || !proto.Equal(d, badRequest) {
		t.Fatalf("detail %v", ds[0])
	}
	if st := erpcgrpc.ToStatus(&erpc.Error{Code: erpc.OK, Msg: "odd"}); st.Code() != codes.Unknown {
		t.Errorf("ToStatus of code OK = %v, want Unknown", st.Code())
	}
}

func TestToERPCToGRPC(t *testing.T) {
	plain := errors.New("plain")
	if erpcgrpc.ToERPC(nil) != nil || erpcgrpc.ToGRPC(nil) != nil {
		t.Error("nil is not nil")
	}
	if erpcgrpc.ToERPC(plain) != plain || erpcgrpc.ToGRPC(plain) != plain {
		t.Error("a plain error changed")
	}
	ee := erpc.Errorf(erpc.NotFound, "gone")
	if erpcgrpc.ToERPC(ee) != ee {
		t.Error("ToERPC changed an *erpc.Error")
	}
	se := status.Error(codes.PermissionDenied, "no")
	if erpcgrpc.ToGRPC(se) != se {
		t.Error("ToGRPC changed a status error")
	}

	wrapped := fmt.Errorf("lookup: %w", status.Error(codes.NotFound, "no row"))
	got := erpcgrpc.ToERPC(wrapped)
	var e *erpc.Error
	if !errors.As(got, &e) || e.Code != erpc.NotFound || e.Msg != "lookup: rpc error: code = NotFound desc = no row" {
		t.Fatalf("ToERPC(wrapped status) = %#v", got)
	}
	if !errors.Is(got, wrapped) {
		t.Error("the status error is not the cause")
	}

	got = erpcgrpc.ToGRPC(fmt.Errorf("lookup: %w", ee))
	if st, ok := status.FromError(got); !ok || st.Code() != codes.NotFound || st.Message() != "gone" {
		t.Fatalf("ToGRPC(wrapped *erpc.Error) = %v", got)
	}
}

// TestERPCServer: a handler's status error reaches an erpc caller with its
// code, message and details.
func TestERPCServer(t *testing.T) {
	srv := erpc.NewServer(erpc.ChainUnaryInterceptor(erpcgrpc.ERPCServerInterceptor()))
	err := erpc.Register(srv, "Check", func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		if req.GetValue() == "" {
			st, _ := status.New(codes.InvalidArgument, "no name").WithDetails(badRequest)
			return nil, st.Err()
		}
		return wrapperspb.String("ok " + req.GetValue()), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://erpcgrpc-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	resp, err := erpc.Invoke[wrapperspb.StringValue](ctx, s, "Check", wrapperspb.String("a"))
	if err != nil || resp.GetValue() != "ok a" {
		t.Fatalf("Check(a) = %v, %v", resp, err)
	}
	_, err = erpc.Invoke[wrapperspb.StringValue](ctx, s, "Check", wrapperspb.String(""))
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.InvalidArgument || e.Msg != "no name" {
		t.Fatalf("Check('') = %v, want InvalidArgument: no name", err)
	}
	if ds, err := protocodec.Details(e); err != nil || len(ds) != 1 || !proto.Equal(ds[0], badRequest) {
		t.Fatalf("details %v, %v", ds, err)
	}
}

// TestGRPCServer: a handler's *erpc.Error reaches a gRPC caller with its
// code, message and details.
func TestGRPCServer(t *testing.T) {
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(erpcgrpc.GRPCServerInterceptor()))
	gs.RegisterService(&grpc.ServiceDesc{
		ServiceName: "test.Checker",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Check", Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			req := new(wrapperspb.StringValue)
			if err := dec(req); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) {
				if v := req.(*wrapperspb.StringValue).GetValue(); v != "" {
					return wrapperspb.String("ok " + v), nil
				}
				e, err := protocodec.ErrorWithDetails(erpc.InvalidArgument, "no name", badRequest)
				if err != nil {
					return nil, err
				}
				return nil, e
			}
			return icpt(ctx, req, &grpc.UnaryServerInfo{FullMethod: "/test.Checker/Check"}, h)
		}}},
	}, struct{}{})
	go gs.Serve(lis)
	defer gs.Stop()

	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	resp := new(wrapperspb.StringValue)
	if err := conn.Invoke(ctx, "/test.Checker/Check", wrapperspb.String("a"), resp); err != nil || resp.GetValue() != "ok a" {
		t.Fatalf("Check(a) = %v, %v", resp, err)
	}
	err = conn.Invoke(ctx, "/test.Checker/Check", wrapperspb.String(""), resp)
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument || st.Message() != "no name" {
		t.Fatalf("Check('') = %v, want InvalidArgument: no name", err)
	}
	if ds := st.Details(); len(ds) != 1 || !proto.Equal(ds[0].(proto.Message), badRequest) {
		t.Fatalf("details %v", ds)
	}
}
