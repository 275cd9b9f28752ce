package erpc

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
)

// gRPC status errors, read without importing gRPC or protobuf (the root
// package needs only the standard library and x/sys): a handler written
// for gRPC returns status.Error(...), whose GRPCStatus method gives a
// *status.Status, whose Proto method gives the google.rpc.Status message
// (a *spb.Status of genproto). Their types live in grpc and genproto, so
// no interface here can name those methods' results: reflection calls
// them by name, and then the message's generated getters, GetCode,
// GetMessage and GetDetails, and each detail's GetTypeUrl and GetValue.
// Only the error path pays for it: a handler's success, and CodeOf(nil),
// never get here.
//
// Without protoreflect, a google.rpc.Status is recognized by its Go shape
// alone: getters GetCode() int32, GetMessage() string and GetDetails()
// returning a slice of pointers or interfaces that have GetTypeUrl()
// string and GetValue() []byte (by kind: named types of those kinds
// pass). The type's name is not checked: an error with GRPCStatus whose
// status has Proto already says it is a gRPC status, and the getters are
// all that is read. Each method's signature is checked before it is
// called; a method of another shape makes the message "not a status", as
// grpc's status.FromError treats an error whose status is no status.

// anyTypeURLPrefix is the prefix of the type URLs protobuf's anypb.New
// writes; a detail whose URL has it keeps only the message name as its
// Type (what codec/protocodec and contrib/grpc expect), any other URL is
// kept whole.
const anyTypeURLPrefix = "type.googleapis.com/"

// grpcStatusError returns the *Error of the first error in err's chain
// (walked as errors.As walks it) that has a GRPCStatus method: its code (a
// code erpc does not have, or OK, becomes Unknown), message and details.
// As grpc's status.FromError does, a status found inside a wrapping error
// takes the whole error's text as its message. It returns nil when no
// error in the chain has the method, or when the first one's status is
// nil or is not a google.rpc.Status (status.FromError's "not a status").
//
// A panic in a method it calls (GRPCStatus, Proto, a getter, Unwrap)
// gives an Internal error naming the panic instead: RespondError may run
// on a goroutine of the application's own (HandleRaw), with no recover
// of erpc's around it, and a broken error type must not end the process.
func grpcStatusError(err error) (found *Error) {
	var link error
	defer func() {
		if p := recover(); p != nil {
			found = &Error{Code: Internal, Msg: fmt.Sprintf("reading the gRPC status of a %T error panicked: %v", link, p)}
		}
	}()
	top := true
	walkChain(err, func(l error) bool {
		link = l
		wrapped := !top // not l != err: an error's dynamic type may not be comparable
		top = false
		st, ok := grpcStatusMessage(l)
		if !ok {
			return false
		}
		if st.IsValid() {
			found = statusMessageError(st)
			if found != nil && wrapped {
				found.Msg = err.Error()
			}
		}
		return true
	})
	return found
}

// walkChain calls visit on err and the errors it wraps, depth first, until
// visit returns true.
func walkChain(err error, visit func(error) bool) bool {
	for err != nil {
		if visit(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if walkChain(e, visit) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// grpcStatusMessage calls err's GRPCStatus method, then the result's Proto
// method. ok reports whether err has a GRPCStatus method of the shape
// grpc's status.FromError looks for (no argument, one result, a pointer
// or an interface). msg is the message Proto gives; it is the zero Value
// when the status is nil, has no Proto method of that shape, or gives a
// nil message. An interface result is read by the value it holds: the
// next methods are looked up on that value's type.
func grpcStatusMessage(err error) (msg reflect.Value, ok bool) {
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return reflect.Value{}, false // a method would run on a nil receiver
	}
	if !isReferenceGetter(v.Type(), "GRPCStatus") {
		return reflect.Value{}, false
	}
	st := nonNil(callGetter(v, "GRPCStatus"))
	if !st.IsValid() || !isReferenceGetter(st.Type(), "Proto") {
		return reflect.Value{}, true
	}
	return nonNil(callGetter(st, "Proto")), true
}

// statusMessageError reads a google.rpc.Status message into an *Error;
// nil if st is of another shape (see the top of this file).
func statusMessageError(st reflect.Value) *Error {
	if !isStatusType(st.Type()) {
		return nil
	}
	e := &Error{Code: Unknown, Msg: callGetter(st, "GetMessage").String()}
	if c := callGetter(st, "GetCode").Int(); c > int64(OK) && c <= int64(Unauthenticated) {
		e.Code = Code(c)
	}
	details := callGetter(st, "GetDetails")
	for i := range details.Len() {
		a := nonNil(details.Index(i))
		if !a.IsValid() {
			continue // a nil detail carries nothing (grpc's Proto, a clone, has none)
		}
		e.Details = append(e.Details, Detail{
			Type:  detailType(callGetter(a, "GetTypeUrl").String()),
			Value: bytes.Clone(callGetter(a, "GetValue").Bytes()),
		})
	}
	return e
}

// isStatusType reports whether t has google.rpc.Status's getters.
func isStatusType(t reflect.Type) bool {
	if resultKind(t, "GetCode") != reflect.Int32 || resultKind(t, "GetMessage") != reflect.String {
		return false
	}
	details := getterResult(t, "GetDetails")
	if details == nil || details.Kind() != reflect.Slice {
		return false
	}
	elem := details.Elem()
	if k := elem.Kind(); k != reflect.Pointer && k != reflect.Interface {
		return false
	}
	return isAnyType(elem)
}

// isAnyType reports whether t has google.protobuf.Any's getters.
func isAnyType(t reflect.Type) bool {
	value := getterResult(t, "GetValue")
	return resultKind(t, "GetTypeUrl") == reflect.String &&
		value != nil && value.Kind() == reflect.Slice && value.Elem().Kind() == reflect.Uint8
}

// isReferenceGetter reports whether t's method name takes no argument and
// gives one pointer or interface.
func isReferenceGetter(t reflect.Type, name string) bool {
	r := getterResult(t, name)
	return r != nil && (r.Kind() == reflect.Pointer || r.Kind() == reflect.Interface)
}

// resultKind is the kind of the one result of t's method name when it
// takes no argument, else Invalid.
func resultKind(t reflect.Type, name string) reflect.Kind {
	if r := getterResult(t, name); r != nil {
		return r.Kind()
	}
	return reflect.Invalid
}

// getterResult is the type of the one result of t's method name when it
// takes no argument, else nil. (An interface type's methods have no
// receiver among their ins; any other type's have it first.)
func getterResult(t reflect.Type, name string) reflect.Type {
	m, ok := t.MethodByName(name)
	if !ok {
		return nil
	}
	receiver := 1
	if t.Kind() == reflect.Interface {
		receiver = 0
	}
	if m.Type.NumIn() != receiver || m.Type.NumOut() != 1 {
		return nil
	}
	return m.Type.Out(0)
}

// callGetter calls v's method name, whose shape was checked on v's type:
// no argument, one result.
func callGetter(v reflect.Value, name string) reflect.Value {
	return v.MethodByName(name).Call(nil)[0]
}

// nonNil is v's dynamic value when v is an interface, and the zero Value
// when v, or the value an interface holds, is nil: a method would run on
// a nil receiver (grpc's own getters allow it, other types need not).
func nonNil(v reflect.Value) reflect.Value {
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		if v.IsNil() {
			return reflect.Value{}
		}
	}
	return v
}

// detailType is the Detail.Type of an Any's type URL: the message name for
// the usual prefix, else the URL whole.
func detailType(url string) string {
	if name, ok := strings.CutPrefix(url, anyTypeURLPrefix); ok {
		return name
	}
	return url
}
