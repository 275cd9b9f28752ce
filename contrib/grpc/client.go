package erpcgrpc

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/erpc-go/erpc"
)

// FromError is grpc's status.FromError for erpc callers: the gRPC status
// of err, and whether err is one. nil gives (nil, true); an error with a
// gRPC status in its chain, what status.FromError gives; else an
// *erpc.Error in its chain (what every failed erpc call returns), its
// status (ToStatus); any other error, Unknown with its text and false.
func FromError(err error) (*status.Status, bool) {
	if err == nil {
		return nil, true
	}
	if st, ok := status.FromError(err); ok {
		return st, true
	}
	var e *erpc.Error
	if errors.As(err, &e) {
		return ToStatus(e), true
	}
	return status.New(codes.Unknown, err.Error()), false
}

// Code is grpc's status.Code for erpc callers: the code of FromError's
// status, OK for nil.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	st, _ := FromError(err)
	return st.Code()
}

// ERPCClientInterceptor returns an erpc client interceptor that gives each
// failed call's *erpc.Error a GRPCStatus method, so that code written for
// gRPC clients (status.FromError, status.Code, status.Convert) reads the
// server's code, message and details from the errors of erpc calls. The
// error still unwraps to the *erpc.Error: errors.As, errors.Is,
// erpc.CodeOf and erpc.NotExecuted see what they saw without it.
func ERPCClientInterceptor() erpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, resp any, s *erpc.Session, invoke erpc.UnaryInvoker) error {
		return StatusError(invoke(ctx, method, req, resp))
	}
}

// statusError is an erpc call's error with the gRPC status of its
// *erpc.Error.
type statusError struct {
	err error
	st  *status.Status
}

func (s *statusError) Error() string              { return s.err.Error() }
func (s *statusError) Unwrap() error              { return s.err }
func (s *statusError) GRPCStatus() *status.Status { return s.st }
