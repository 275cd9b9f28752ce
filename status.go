package erpc

import (
	"context"
	"errors"
	"fmt"

	"github.com/erpc-go/erpc/internal/proto"
)

// Code is the status of a call, with the meanings gRPC gave them.
type Code uint8

// Status codes. OK is never the code of an error.
const (
	OK                 Code = 0
	Canceled           Code = 1  // the caller canceled the call
	Unknown            Code = 2  // a handler returned an error without a code
	InvalidArgument    Code = 3  // the request is malformed (e.g. too large)
	DeadlineExceeded   Code = 4  // the caller's deadline passed
	NotFound           Code = 5  //
	AlreadyExists      Code = 6  //
	PermissionDenied   Code = 7  //
	ResourceExhausted  Code = 8  // the server refused the request: it is full (NACK)
	FailedPrecondition Code = 9  //
	Aborted            Code = 10 //
	OutOfRange         Code = 11 //
	Unimplemented      Code = 12 // no handler for the method
	Internal           Code = 13 // the handler panicked, or a protocol invariant broke
	Unavailable        Code = 14 // the server is unreachable, restarted, or closing
	DataLoss           Code = 15 //
	Unauthenticated    Code = 16 //
)

var codeNames = [...]string{"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded",
	"NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
	"Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", c)
}

// Error is the error of a failed call: a Code, a message, and the cause
// when there is one (context.DeadlineExceeded, a transport error...).
//
// errors.Is matches an *Error against another *Error with the same code, so
// errors.Is(err, erpc.ErrUnavailable) works, and against its cause, so
// errors.Is(err, context.DeadlineExceeded) works too.
type Error struct {
	Code  Code
	Msg   string
	Cause error
}

// Errorf returns an error with a code, for handlers to return.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return "erpc: " + e.Code.String()
	}
	return "erpc: " + e.Code.String() + ": " + e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Msg == "" && t.Cause == nil
}

// Sentinels for errors.Is: each matches any error with its code.
var (
	ErrCanceled          = &Error{Code: Canceled}
	ErrDeadlineExceeded  = &Error{Code: DeadlineExceeded}
	ErrInvalidArgument   = &Error{Code: InvalidArgument}
	ErrResourceExhausted = &Error{Code: ResourceExhausted}
	ErrUnimplemented     = &Error{Code: Unimplemented}
	ErrInternal          = &Error{Code: Internal}
	ErrUnavailable       = &Error{Code: Unavailable}
)

// CodeOf returns the code of err: OK for nil, the code of an *Error in its
// chain, Canceled or DeadlineExceeded for context errors, Unknown otherwise.
func CodeOf(err error) Code {
	var e *Error
	switch {
	case err == nil:
		return OK
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded
	}
	return Unknown
}

// engineError turns an engine failure into a status error.
func engineError(err error) *Error {
	var size *proto.SizeError
	switch {
	case errors.As(err, &size):
		return &Error{Code: InvalidArgument, Msg: size.Error(), Cause: err}
	case errors.Is(err, proto.ErrOverloaded):
		return &Error{Code: ResourceExhausted, Msg: "the server refused the request: it holds all the requests it can (retry later)", Cause: err}
	case errors.Is(err, proto.ErrCanceled):
		return &Error{Code: Canceled, Msg: "call canceled", Cause: context.Canceled}
	case errors.Is(err, proto.ErrNotServing):
		return &Error{Code: Unimplemented, Msg: err.Error(), Cause: err}
	}
	return &Error{Code: Unavailable, Msg: err.Error(), Cause: err}
}

// callError is the error of call c: the engine's failure err, or else the
// status a handler answered with, whose message is the response msg.
func (ep *Endpoint) callError(c *call, err error, status uint8, msg []byte) *Error {
	if err != nil {
		e := engineError(err)
		if e.Code == Unavailable {
			e.Msg = fmt.Sprintf("call %q to %s: %s", c.method, c.sess.target, e.Msg)
		}
		return e
	}
	code := Code(status)
	switch {
	case code == Unimplemented && len(msg) == 0:
		return &Error{Code: code, Msg: fmt.Sprintf("the server at %s has no method %q", c.sess.target, c.method)}
	case code == DeadlineExceeded: // the server's handler saw the deadline pass first
		return &Error{Code: code, Msg: string(msg), Cause: context.DeadlineExceeded}
	case code == Canceled:
		return &Error{Code: code, Msg: string(msg), Cause: context.Canceled}
	}
	return &Error{Code: code, Msg: string(msg)}
}

// contextError turns a done context into the status error of the call it
// ended.
func contextError(ctx context.Context) *Error {
	msg := "call canceled"
	code := Canceled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg, code = "deadline exceeded", DeadlineExceeded
	}
	if cause := context.Cause(ctx); cause != ctx.Err() {
		msg += ": " + cause.Error()
	}
	return &Error{Code: code, Msg: msg, Cause: ctx.Err()}
}
