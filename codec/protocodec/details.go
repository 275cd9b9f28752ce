package protocodec

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/erpc-go/erpc"
)

// ErrorWithDetails returns an error with code and message that carries
// the protobuf messages details to the caller, as gRPC's
// status.WithDetails does.
func ErrorWithDetails(code erpc.Code, msg string, details ...proto.Message) (*erpc.Error, error) {
	e := &erpc.Error{Code: code, Msg: msg}
	for _, d := range details {
		b, err := proto.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("protocodec: detail %T: %w", d, err)
		}
		e.Details = append(e.Details, erpc.Detail{Type: string(d.ProtoReflect().Descriptor().FullName()), Value: b})
	}
	return e, nil
}

// Details returns the protobuf messages attached to err (an *erpc.Error
// in its chain), decoded with the types linked into the program. A
// detail's Type is a message name or, for one that came from a gRPC status
// with an unusual type URL prefix, the whole URL. A detail
// of a type the program does not know, or that does not decode, is an
// error (the others are still returned).
func Details(err error) ([]proto.Message, error) {
	var e *erpc.Error
	if !errors.As(err, &e) {
		return nil, nil
	}
	var out []proto.Message
	var first error
	for _, d := range e.Details {
		mt, err := protoregistry.GlobalTypes.FindMessageByURL(d.Type) // a name is a URL without prefix
		if err != nil {
			first = firstErr(first, fmt.Errorf("protocodec: detail of type %q: %w", d.Type, err))
			continue
		}
		m := mt.New().Interface()
		if err := proto.Unmarshal(d.Value, m); err != nil {
			first = firstErr(first, fmt.Errorf("protocodec: detail of type %q: %w", d.Type, err))
			continue
		}
		out = append(out, m)
	}
	return out, first
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
