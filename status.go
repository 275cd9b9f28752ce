package erpc

import (
	"bytes"
	"context"
	"encoding/binary"
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
//
// A handler that returns a nil *Error as its error (a non-nil error
// holding a nil pointer: `var e *erpc.Error; return nil, e`) has not said
// it succeeded: the call fails with Unknown, "handler returned a nil
// *erpc.Error". A nil *Error's methods and CodeOf (Unknown) do not panic.
type Error struct {
	Code  Code
	Msg   string
	Cause error
	// Details are typed values attached to the error that travel with
	// it to the caller (gRPC's status details); codec/protocodec adds
	// and reads protobuf ones.
	Details []Detail

	// answered: the status is a server's handler's own answer (it ran
	// and returned this error), not a failure of the transport, the
	// session or the server itself (a refusal, or a handler's panic,
	// which the server marks); a Client neither retries nor ejects on it.
	answered bool
}

// serverFaultForTest, set only by tests (SimulateServerFaults), makes
// the answers whose message it picks count as failures of the server
// rather than its handler's answers: with a session up, every real such
// failure is one the engine proves never ran, so tests need it to load a
// Client's retries and ejection without killing a session per call.
var serverFaultForTest func(msg string) bool

// handlerAnswer reports whether err is a status a server's handler
// answered with (see Error.answered).
func handlerAnswer(err error) bool {
	var e *Error
	return errors.As(err, &e) && e != nil && e.answered
}

// Detail is one value attached to an Error: its type's name (for a
// protobuf message, its full name) and its encoding.
type Detail struct {
	Type  string
	Value []byte
}

// errNilError is the text of a nil *Error.
const errNilError = "nil *erpc.Error"

// Errorf returns an error with a code, for handlers to return. Codes are
// OK to Unauthenticated: a handler's error with a larger code reaches the
// client as Unknown, with its message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e == nil {
		return "erpc: " + errNilError
	}
	if e.Msg == "" {
		return "erpc: " + e.Code.String()
	}
	return "erpc: " + e.Code.String() + ": " + e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Cause
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && e != nil && t != nil && t.Code == e.Code && t.Msg == "" && t.Cause == nil
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
// chain (Unknown for a nil *Error), else the code of a gRPC status in it
// (an error with a GRPCStatus method, as grpc's status.Error returns),
// Canceled or DeadlineExceeded for context errors, Unknown otherwise.
func CodeOf(err error) Code {
	if err == nil {
		return OK // before e, which escapes: no allocation for a success
	}
	var e *Error
	if errors.As(err, &e) {
		if e == nil {
			return Unknown
		}
		return e.Code
	}
	if e := grpcStatusError(err); e != nil {
		return e.Code
	}
	return contextCode(err)
}

// contextCode is Canceled or DeadlineExceeded for a context error, else
// Unknown.
func contextCode(err error) Code {
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded
	}
	return Unknown
}

// statusOf is the *Error a handler's non-nil error err answers with: an
// *Error in its chain as it is; else a gRPC status in it, with its code,
// message and details (see grpcStatusError); else Canceled or
// DeadlineExceeded for a context error, Unknown for any other, with err's
// text as the message. A nil *Error (a non-nil error interface that holds
// one) answers Unknown, saying so; a code above Unauthenticated answers
// Unknown with the error's message.
func statusOf(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		switch {
		case e == nil: // a non-nil error that holds no status: a handler's bug
			return &Error{Code: Unknown, Msg: "handler returned a " + errNilError}
		case e.Code > Unauthenticated: // not a code a client knows
			c := *e
			c.Code = Unknown
			return &c
		}
		return e
	}
	if e := grpcStatusError(err); e != nil {
		return e
	}
	return &Error{Code: contextCode(err), Msg: err.Error()}
}

// engineError turns an engine failure into a status error, marked if it
// proves the call never ran (see NotExecuted).
func engineError(err error) *Error {
	e := engineStatus(err)
	var size *proto.SizeError
	switch {
	case errors.Is(err, proto.ErrNotExecuted), // the session ended before the request reached it
		errors.Is(err, proto.ErrOverloaded),   // a NACK: refused, never run
		errors.As(err, &size) && size.Request, // refused as too large, here or by the server
		errors.Is(err, proto.ErrNoSession):    // never handed to a session
		notRun(e)
	}
	return e
}

// engineStatus is the status error of an engine failure.
func engineStatus(err error) *Error {
	var size *proto.SizeError
	switch {
	case errors.As(err, &size):
		return &Error{Code: InvalidArgument, Msg: size.Error(), Cause: err}
	case errors.Is(err, proto.ErrOverloaded):
		return &Error{Code: ResourceExhausted, Msg: "the server refused the request: it holds all the requests it can (retry later)", Cause: err}
	case errors.Is(err, proto.ErrCanceled):
		return &Error{Code: Canceled, Msg: "call canceled", Cause: context.Canceled}
	case errors.Is(err, proto.ErrTLSRequired):
		return &Error{Code: Unauthenticated, Msg: err.Error(), Cause: err}
	case errors.Is(err, proto.ErrNotServing):
		return &Error{Code: Unimplemented, Msg: err.Error(), Cause: err}
	}
	return &Error{Code: Unavailable, Msg: err.Error(), Cause: err}
}

// where prefixes msg with what c called and where, so an error that the
// caller's context would also explain still says which call it ended.
func (c *call) where(msg string) string {
	return fmt.Sprintf("call %q to %s: %s", c.method, c.sess.target, msg)
}

// callError is the error of call c: the engine's failure err, or else the
// status a handler answered with, whose message is the response msg.
func (ep *Endpoint) callError(c *call, err error, status uint8, msg []byte) *Error {
	if err != nil {
		e := engineError(err)
		if e.Code == Unavailable || errors.Is(err, proto.ErrMsgTooLarge) { // a size alone says not which call
			e.Msg = c.where(e.Msg)
		}
		return e
	}
	code := Code(status)
	if code > Unauthenticated { // no code we know: a server of another kind, or hostile
		code = Unknown
	}
	msgText, details := decodeErrorPayload(msg)
	details, refused := withoutNotExecuted(details)           // the server refused it before it ran
	details, fault := withoutMark(details, serverFaultDetail) // the server failed, not its handler
	var e *Error
	switch {
	case code == Unimplemented && msgText == "":
		e = &Error{Code: code, Msg: fmt.Sprintf("the server at %s has no method %q", c.sess.target, c.method), Details: details}
	case code == DeadlineExceeded: // the server's handler saw the deadline pass first
		e = &Error{Code: code, Msg: c.where("the server's handler: " + msgText), Cause: context.DeadlineExceeded, Details: details}
	case code == Canceled:
		e = &Error{Code: code, Msg: c.where("the server's handler: " + msgText), Cause: context.Canceled, Details: details}
	default:
		e = &Error{Code: code, Msg: msgText, Details: details}
	}
	if refused {
		notRun(e)
	} else if !fault && (serverFaultForTest == nil || !serverFaultForTest(msgText)) {
		e.answered = true // the server's handler ran and said so
	}
	return e
}

// An error's answer is its message, or, when it has details (or a message
// that starts with a zero byte), a zero byte, the message's length and the
// message, then the details: a count, and per detail its type and value,
// each a length and bytes (lengths are uvarints).

// encodeErrorPayload is the answer that carries e.
func encodeErrorPayload(e *Error) []byte {
	if len(e.Details) == 0 && (len(e.Msg) == 0 || e.Msg[0] != 0) {
		return []byte(e.Msg)
	}
	b := []byte{0}
	b = binary.AppendUvarint(b, uint64(len(e.Msg)))
	b = append(b, e.Msg...)
	b = binary.AppendUvarint(b, uint64(len(e.Details)))
	for _, d := range e.Details {
		b = binary.AppendUvarint(b, uint64(len(d.Type)))
		b = append(b, d.Type...)
		b = binary.AppendUvarint(b, uint64(len(d.Value)))
		b = append(b, d.Value...)
	}
	return b
}

// decodeErrorPayload reads an error's answer; a malformed one is taken as
// a plain message, whole.
func decodeErrorPayload(p []byte) (string, []Detail) {
	if len(p) == 0 || p[0] != 0 {
		return string(p), nil
	}
	field := func(b []byte) ([]byte, []byte, bool) {
		n, l := binary.Uvarint(b)
		if l <= 0 || n > uint64(len(b)-l) {
			return nil, nil, false
		}
		return b[l : l+int(n)], b[l+int(n):], true
	}
	msg, rest, ok := field(p[1:])
	if !ok {
		return string(p), nil
	}
	n, l := binary.Uvarint(rest)
	if l <= 0 || n > uint64(len(rest)) {
		return string(p), nil
	}
	rest = rest[l:]
	details := make([]Detail, 0, n)
	for range n {
		var typ, val []byte
		if typ, rest, ok = field(rest); !ok {
			return string(p), nil
		}
		if val, rest, ok = field(rest); !ok {
			return string(p), nil
		}
		details = append(details, Detail{Type: string(typ), Value: bytes.Clone(val)})
	}
	return string(msg), details
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
