package erpc_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/erpc-go/erpc"
)

// The shapes the reflective read of a gRPC status accepts and refuses:
// each refused message below differs from rpcStatus (which is accepted)
// by one method's signature.

// protoOf is grpc's *status.Status in shape, with any message: Proto's
// result is an interface, so the message's own type is what is read.
type protoOf struct{ m any }

func (s *protoOf) Proto() any { return s.m }

// messageError is a status error whose message is m.
type messageError struct{ st *protoOf }

func (e *messageError) Error() string        { return "message error" }
func (e *messageError) GRPCStatus() *protoOf { return e.st }

func errWith(m any) error { return &messageError{&protoOf{m}} }

func shapedStatus() *rpcStatus {
	return &rpcStatus{code: 5, message: "shaped", details: []*rpcAny{{"type.googleapis.com/test.X", []byte{7}}}}
}

// Messages with one getter of another signature: not a status.
type (
	codeInt64      struct{ *rpcStatus }
	codeArg        struct{ *rpcStatus }
	codeVariadic   struct{ *rpcStatus }
	codeTwoResults struct{ *rpcStatus }
	messageBytes   struct{ *rpcStatus }
	detailsStrings struct{ *rpcStatus }
	detailsValues  struct{ *rpcStatus }
	detailsOne     struct{ *rpcStatus }
	detailsArray   struct{ *rpcStatus }
	detailsAny     struct{ *rpcStatus }
	detailsNoValue struct{ *rpcStatus }
	detailsStrVal  struct{ *rpcStatus }
	detailsIntsVal struct{ *rpcStatus }
	detailsURLArg  struct{ *rpcStatus }
	codeOnly       struct{}
)

func (codeInt64) GetCode() int64                    { return 5 }
func (codeArg) GetCode(int) int32                   { return 5 }
func (codeVariadic) GetCode(...int) int32           { return 5 }
func (codeTwoResults) GetCode() (int32, error)      { return 5, nil }
func (messageBytes) GetMessage() []byte             { return []byte("shaped") }
func (detailsStrings) GetDetails() []string         { return nil }
func (detailsValues) GetDetails() []rpcAny          { return nil }
func (detailsOne) GetDetails() *rpcAny              { return nil }
func (detailsArray) GetDetails() [1]*rpcAny         { return [1]*rpcAny{} }
func (detailsAny) GetDetails() []any                { return nil }
func (detailsNoValue) GetDetails() []*typeURLOnly   { return nil }
func (detailsStrVal) GetDetails() []*valueString    { return nil }
func (detailsIntsVal) GetDetails() []*valueInts     { return nil }
func (detailsURLArg) GetDetails() []*typeURLWithArg { return nil }
func (codeOnly) GetCode() int32                     { return 5 }
func (typeURLOnly) GetTypeUrl() string              { return "" }
func (valueString) GetValue() string                { return "" }
func (valueInts) GetValue() []int                   { return nil }
func (typeURLWithArg) GetTypeUrl(bool) string       { return "" }
func (typeURLWithArg) GetValue() []byte             { return nil }
func (detailsInterface) GetDetails() []anyGetter {
	return []anyGetter{nil, (*rpcAny)(nil), &rpcAny{"u", []byte{1}}}
}
func (namedKinds) GetCode() codeNumber       { return 5 }
func (namedKinds) GetDetails() []*namedValue { return []*namedValue{{}} }
func (*namedValue) GetTypeUrl() typeURL      { return "type.googleapis.com/test.Named" }
func (*namedValue) GetValue() rawBytes       { return rawBytes{9} }
func (valueInts) GetTypeUrl() string         { return "" }
func (valueString) GetTypeUrl() string       { return "" }

type (
	typeURLOnly    struct{}
	valueString    struct{}
	valueInts      struct{}
	typeURLWithArg struct{}
	// accepted: interface elements (nil ones skipped), named kinds
	detailsInterface struct{ *rpcStatus }
	namedKinds       struct{ *rpcStatus }
	namedValue       struct{}
	anyGetter        interface {
		GetTypeUrl() string
		GetValue() []byte
	}
	codeNumber int32
	typeURL    string
	rawBytes   []byte
)

// Errors whose GRPCStatus has another shape: skipped, the chain goes on.
type (
	grpcStatusArg    struct{ inner error }
	grpcStatusValue  struct{ inner error }
	grpcStatusTwo    struct{ inner error }
	grpcStatusNilInt struct{}
)

func (grpcStatusArg) Error() string                                  { return "status with an argument" }
func (e grpcStatusArg) Unwrap() error                                { return e.inner }
func (grpcStatusArg) GRPCStatus(int) *fakeStatus                     { panic("called") }
func (grpcStatusValue) Error() string                                { return "status by value" }
func (e grpcStatusValue) Unwrap() error                              { return e.inner }
func (grpcStatusValue) GRPCStatus() fakeStatus                       { panic("called") }
func (grpcStatusTwo) Error() string                                  { return "status and error" }
func (e grpcStatusTwo) Unwrap() error                                { return e.inner }
func (grpcStatusTwo) GRPCStatus() (*fakeStatus, error)               { panic("called") }
func (grpcStatusNilInt) Error() string                               { return "nil status in an interface" }
func (grpcStatusNilInt) GRPCStatus() interface{ Proto() *rpcStatus } { return (*fakeStatus)(nil) }

// Statuses whose Proto has another shape: not a status.
type (
	protoArg   struct{}
	protoValue struct{}
)

func (protoArg) Proto(int) *rpcStatus { panic("called") }
func (protoValue) Proto() rpcStatus   { panic("called") }

// statusErrors is a status error on a hand-made status value.
type statusErrors[S any] struct{ st S }

func (e statusErrors[S]) Error() string  { return "hand-made status" }
func (e statusErrors[S]) GRPCStatus() *S { return &e.st }

// sliceStatusError is a status error of a type that cannot be compared.
type sliceStatusError []*fakeStatus

func (e sliceStatusError) Error() string           { return "uncomparable" }
func (e sliceStatusError) GRPCStatus() *fakeStatus { return e[0] }

// TestGRPCStatusShapes: a message with one getter of another signature
// than google.rpc.Status's (numbers or kinds of ins and outs), a Proto or
// GRPCStatus of another shape, and nil values at every step are "not a
// status": Unknown with the error's text and no details, with no method
// called on a nil receiver (the fakes' getters would panic). A GRPCStatus
// of another shape is skipped and a status further down is found.
// Interface-typed details (nil ones skipped) and named types of the right
// kinds are read.
func TestGRPCStatusShapes(t *testing.T) {
	inner := newFakeStatusError(5, "inner", fakeDetail{"type.googleapis.com/test.In", []byte{3}})
	s := shapedStatus
	notStatus := map[string]error{
		"GetCode int64":        errWith(&codeInt64{s()}),
		"GetCode(int)":         errWith(&codeArg{s()}),
		"GetCode(...int)":      errWith(&codeVariadic{s()}),
		"GetCode two results":  errWith(&codeTwoResults{s()}),
		"GetMessage []byte":    errWith(&messageBytes{s()}),
		"GetDetails []string":  errWith(&detailsStrings{s()}),
		"GetDetails []struct":  errWith(&detailsValues{s()}),
		"GetDetails pointer":   errWith(&detailsOne{s()}),
		"GetDetails array":     errWith(&detailsArray{s()}),
		"GetDetails []any":     errWith(&detailsAny{s()}),
		"Any without GetValue": errWith(&detailsNoValue{s()}),
		"GetValue string":      errWith(&detailsStrVal{s()}),
		"GetValue []int":       errWith(&detailsIntsVal{s()}),
		"GetTypeUrl(bool)":     errWith(&detailsURLArg{s()}),
		"GetCode only":         errWith(&codeOnly{}),
		"Proto gives nil":      errWith(nil),
		"Proto gives nil ptr":  errWith((*rpcStatus)(nil)),
		"nil status in iface":  grpcStatusNilInt{},
		"Proto(int)":           statusErrors[protoArg]{},
		"Proto by value":       statusErrors[protoValue]{},
		"nil error pointer":    (*messageError)(nil),
	}
	found := map[string]error{
		"GRPCStatus(int)":           grpcStatusArg{inner},
		"GRPCStatus by value":       grpcStatusValue{inner},
		"GRPCStatus two results":    grpcStatusTwo{inner},
		"GRPCStatus(int) wrapped":   fmt.Errorf("outer: %w", grpcStatusArg{inner}),
		"uncomparable error":        sliceStatusError{inner.st},
		"uncomparable error joined": errors.Join(sliceStatusError{inner.st}),
	}
	all := map[string]error{}
	for k, v := range notStatus {
		all[k] = v
	}
	for k, v := range found {
		all[k] = v
	}
	all["control"] = errWith(s())
	all["interface details"] = errWith(&detailsInterface{s()})
	all["named kinds"] = errWith(&namedKinds{s()})
	ctx, sess := serveFailing(t, func(req []byte) error { return all[string(req)] })
	call := func(name string) *erpc.Error {
		t.Helper()
		_, err := sess.Call(ctx, "Fail", []byte(name), nil)
		var e *erpc.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: the caller got %v", name, err)
		}
		if erpc.CodeOf(all[name]) != e.Code {
			t.Fatalf("%s: CodeOf = %v, the caller got %v", name, erpc.CodeOf(all[name]), e)
		}
		return e
	}
	for name, sent := range notStatus {
		if e := call(name); e.Code != erpc.Unknown || e.Msg != sent.Error() || len(e.Details) != 0 {
			t.Errorf("%s: the caller got %v %q %v, want Unknown %q", name, e.Code, e.Msg, e.Details, sent.Error())
		}
	}
	for name, sent := range found {
		e := call(name)
		msg := "inner"
		if name != "uncomparable error" {
			msg = sent.Error() // found inside: the whole error's text
		}
		if e.Code != erpc.NotFound || e.Msg != msg || len(e.Details) != 1 || e.Details[0].Type != "test.In" {
			t.Errorf("%s: the caller got %v %q %v, want NotFound %q and the inner detail", name, e.Code, e.Msg, e.Details, msg)
		}
	}
	if e := call("control"); e.Code != erpc.NotFound || e.Msg != "shaped" || len(e.Details) != 1 || !bytes.Equal(e.Details[0].Value, []byte{7}) {
		t.Errorf("control: the caller got %v %q %v", e.Code, e.Msg, e.Details)
	}
	if e := call("interface details"); e.Code != erpc.NotFound || len(e.Details) != 1 || e.Details[0].Type != "u" {
		t.Errorf("interface details: the caller got %v %q %v, want the one non-nil detail", e.Code, e.Msg, e.Details)
	}
	if e := call("named kinds"); e.Code != erpc.NotFound || len(e.Details) != 1 || e.Details[0].Type != "test.Named" || !bytes.Equal(e.Details[0].Value, []byte{9}) {
		t.Errorf("named kinds: the caller got %v %q %v", e.Code, e.Msg, e.Details)
	}
}
