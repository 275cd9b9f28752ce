// Package erpcgrpc lets one implementation serve over gRPC and erpc and
// keep its errors' codes on both, and lets erpc callers read erpc errors
// as gRPC statuses. erpc's status codes are gRPC's.
//
// A handler that returns a gRPC status error (status.Error, st.Err())
// needs nothing: erpc answers with its code, message and details as they
// are (the core reads any error with a GRPCStatus method without importing
// gRPC). ERPCServerInterceptor, which did that before, still works and is
// no longer needed.
//
// The other way needs this package, since only a package that imports
// gRPC can give an error the GRPCStatus method that grpc's status.FromError
// looks for. A handler that returns an *erpc.Error served over gRPC needs
// GRPCServerInterceptor; an erpc caller reads a call's error as a gRPC
// status with FromError (or Code), or installs ERPCClientInterceptor on its
// session so that grpc's own status.FromError and status.Code work on the
// errors its calls return:
//
//	gsrv := grpc.NewServer(grpc.ChainUnaryInterceptor(erpcgrpc.GRPCServerInterceptor()))
//	greeterpb.RegisterGreeterERPCServer(esrv, impl) // no interceptor needed
//	greeterpb.RegisterGreeterServer(gsrv, impl)
//
//	s, err := erpc.Dial(ctx, target, erpc.WithUnaryClientInterceptors(erpcgrpc.ERPCClientInterceptor()))
//	...
//	_, err = client.SayHello(ctx, req)
//	st, _ := status.FromError(err) // the server's code, message and details
//
// The code, the message and the details travel: a gRPC status's details
// (Any messages) become erpc.Details whose Type is the Any's message name
// (the whole type URL when its prefix is not type.googleapis.com/) and
// whose Value is the Any's value, what codec/protocodec.Details decodes;
// and back. One difference remains: an erpc caller's Canceled or
// DeadlineExceeded error answered by the server's handler has a message
// that names the call ahead of the handler's.
//
// Metadata works the gRPC way too: with ServerMetadata installed on the
// erpc server, a handler written for gRPC reads the caller's metadata with
// metadata.FromIncomingContext and sets response headers and trailers
// with grpc.SetHeader, grpc.SendHeader and grpc.SetTrailer; an erpc caller
// receives them with erpc.WithResponseMetadata (or Invoke's erpc.Header
// and erpc.Trailer options), or maps grpc.Header and grpc.Trailer call
// options and grpc's outgoing metadata onto its call with CallContext
// (ClientMetadata does the outgoing part as a client interceptor):
//
//	esrv := erpc.NewServer(erpc.ChainUnaryInterceptor(erpcgrpc.ServerMetadata()))
//	...
//	var header, trailer metadata.MD
//	ctx = erpcgrpc.CallContext(ctx, grpc.Header(&header), grpc.Trailer(&trailer))
//	reply, err := client.SayHello(ctx, req)
//
// Streams too: ServerStream adapts an erpc stream to grpc-go's generic
// server stream interfaces (grpc.ServerStreamingServer[Res],
// grpc.ClientStreamingServer[Req, Res], grpc.BidiStreamingServer[Req,
// Res]), with grpc's metadata functions working on its context, and
// OpenStream gives an erpc client gRPC's client stream shapes; what
// protoc-gen-go-erpc generates with grpc_compat=true uses them, so one
// implementation serves every method both ways.
//
// Import it under a name of its own beside gRPC's package:
//
//	import erpcgrpc "github.com/erpc-go/erpc/contrib/grpc"
package erpcgrpc

import (
	"context"
	"errors"
	"strings"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/erpc-go/erpc"
)

// typeURLPrefix is the prefix of the type URLs of the details made from
// erpc ones, the one anypb.New uses.
const typeURLPrefix = "type.googleapis.com/"

// ERPCServerInterceptor returns an erpc server interceptor that turns a
// handler's gRPC status error into an *erpc.Error with the same code,
// message and details (ToERPC). Other errors pass unchanged. It is no
// longer needed: erpc answers a gRPC status error the same way without it.
func ERPCServerInterceptor() erpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *erpc.UnaryServerInfo, next erpc.UnaryHandler) (any, error) {
		resp, err := next(ctx, req)
		return resp, ToERPC(err)
	}
}

// GRPCServerInterceptor returns a gRPC unary server interceptor that turns
// a handler's *erpc.Error into a gRPC status error with the same code,
// message and details (ToGRPC). Other errors pass unchanged.
func GRPCServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		return resp, ToGRPC(err)
	}
}

// ToERPC returns err as an erpc handler should return it: if err is (or
// wraps) a gRPC status error and no *erpc.Error, the *erpc.Error of that
// status (FromStatus), with err as its cause; any other err unchanged.
func ToERPC(err error) error {
	if err == nil {
		return nil
	}
	var e *erpc.Error
	if errors.As(err, &e) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	e = FromStatus(st)
	e.Cause = err
	return e
}

// ToGRPC returns err as a gRPC handler should return it: if err is (or
// wraps) an *erpc.Error and no gRPC status, the status error of that
// *erpc.Error (ToStatus); any other err unchanged.
func ToGRPC(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var e *erpc.Error
	if !errors.As(err, &e) {
		return err
	}
	return ToStatus(e).Err()
}

// FromStatus returns the *erpc.Error of a gRPC status: the same code (a
// code erpc does not have becomes Unknown), message and details. An OK
// status, which is no error, gives nil.
func FromStatus(st *status.Status) *erpc.Error {
	if st == nil || st.Code() == codes.OK {
		return nil
	}
	p := st.Proto()
	e := &erpc.Error{Code: erpc.Unknown, Msg: p.GetMessage()}
	if c := p.GetCode(); c >= 0 && c <= int32(erpc.Unauthenticated) {
		e.Code = erpc.Code(c)
	}
	for _, d := range p.GetDetails() {
		e.Details = append(e.Details, erpc.Detail{Type: detailType(d.GetTypeUrl()), Value: d.GetValue()})
	}
	return e
}

// ToStatus returns the gRPC status of an *erpc.Error: the same code
// (Unknown for OK, which is no error's), message and details (each an Any
// of type URL type.googleapis.com/ plus the detail's type name, or the
// type itself when it is a URL already).
func ToStatus(e *erpc.Error) *status.Status {
	code := codes.Code(e.Code)
	if code == codes.OK {
		code = codes.Unknown
	}
	p := &spb.Status{Code: int32(code), Message: e.Msg}
	for _, d := range e.Details {
		p.Details = append(p.Details, &anypb.Any{TypeUrl: typeURL(d.Type), Value: d.Value})
	}
	return status.FromProto(p)
}

// detailType is the erpc.Detail Type of an Any's type URL: the message
// name for the usual prefix, else the URL whole (as the erpc core does).
func detailType(url string) string {
	if name, ok := strings.CutPrefix(url, typeURLPrefix); ok {
		return name
	}
	return url
}

// typeURL is the Any type URL of an erpc.Detail Type.
func typeURL(typ string) string {
	if strings.Contains(typ, "/") {
		return typ
	}
	return typeURLPrefix + typ
}
