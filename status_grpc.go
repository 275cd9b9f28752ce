package erpc

import (
	"bytes"
	"reflect"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// gRPC status errors, read without importing gRPC (the root module needs
// only protobuf): a handler written for gRPC returns status.Error(...),
// whose GRPCStatus method gives a *status.Status. Its type lives in grpc,
// so no interface here can name that method's result; reflection calls
// GRPCStatus and then the status's Proto method, and protoreflect reads
// the google.rpc.Status message it returns. Only the error path pays for
// it: a handler's success, and CodeOf(nil), never get here.

// googleRPCStatus and googleProtobufAny are the messages a gRPC status is
// made of (google/rpc/status.proto, google/protobuf/any.proto).
const (
	googleRPCStatus   protoreflect.FullName = "google.rpc.Status"
	googleProtobufAny protoreflect.FullName = "google.protobuf.Any"
)

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
func grpcStatusError(err error) *Error {
	var found *Error
	walkChain(err, func(link error) bool {
		st, ok := grpcStatusProto(link)
		if !ok {
			return false
		}
		if st != nil {
			found = statusMessageError(st)
			if found != nil && link != err {
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

// grpcStatusProto calls err's GRPCStatus method, then the result's Proto
// method. ok reports whether err has a GRPCStatus method of that shape
// (no argument, one pointer or interface result); msg is nil when the
// status is nil or has no Proto method giving a protobuf message.
func grpcStatusProto(err error) (msg protoreflect.Message, ok bool) {
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, false // a method would run on a nil receiver
	}
	m := v.MethodByName("GRPCStatus")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return nil, false
	}
	st := m.Call(nil)[0]
	if k := st.Kind(); k != reflect.Pointer && k != reflect.Interface {
		return nil, false
	}
	if st.IsNil() {
		return nil, true
	}
	p := st.MethodByName("Proto")
	if !p.IsValid() || p.Type().NumIn() != 0 || p.Type().NumOut() != 1 {
		return nil, true
	}
	pm, isMsg := p.Call(nil)[0].Interface().(proto.Message)
	if !isMsg || pm == nil || reflect.ValueOf(pm).IsNil() {
		return nil, true
	}
	return pm.ProtoReflect(), true
}

// statusMessageError reads a google.rpc.Status message (code 1, message 2,
// repeated google.protobuf.Any details 3, each type_url 1 and value 2)
// into an *Error; nil if st is another message.
func statusMessageError(st protoreflect.Message) *Error {
	fields := st.Descriptor().Fields()
	code, msg, details := fields.ByNumber(1), fields.ByNumber(2), fields.ByNumber(3)
	if st.Descriptor().FullName() != googleRPCStatus ||
		code == nil || code.Kind() != protoreflect.Int32Kind ||
		msg == nil || msg.Kind() != protoreflect.StringKind ||
		details == nil || !details.IsList() || details.Message() == nil ||
		details.Message().FullName() != googleProtobufAny {
		return nil
	}
	e := &Error{Code: Unknown, Msg: st.Get(msg).String()}
	if c := st.Get(code).Int(); c > int64(OK) && c <= int64(Unauthenticated) {
		e.Code = Code(c)
	}
	list := st.Get(details).List()
	for i := range list.Len() {
		a := list.Get(i).Message()
		af := a.Descriptor().Fields()
		url, val := af.ByNumber(1), af.ByNumber(2)
		if url == nil || val == nil {
			continue
		}
		e.Details = append(e.Details, Detail{
			Type:  detailType(a.Get(url).String()),
			Value: bytes.Clone(a.Get(val).Bytes()),
		})
	}
	return e
}

// detailType is the Detail.Type of an Any's type URL: the message name for
// the usual prefix, else the URL whole.
func detailType(url string) string {
	if name, ok := strings.CutPrefix(url, anyTypeURLPrefix); ok {
		return name
	}
	return url
}
