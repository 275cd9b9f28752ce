// Package protocodec is erpc's protobuf codec. Importing it, even for its
// side effect only, lets the typed API (erpc.Register, erpc.Invoke)
// encode protobuf messages:
//
//	import _ "github.com/erpc-go/erpc/codec/protocodec"
//
// It lives apart from package codec so that erpc's core needs no
// protobuf library.
package protocodec

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/erpc-go/erpc/codec"
)

func init() {
	codec.Register(func(v any) (codec.Codec, bool) {
		_, ok := v.(proto.Message)
		return Codec{}, ok
	})
}

// Codec encodes protobuf messages in the binary wire format.
type Codec struct{}

var (
	_ codec.TypeNamer = Codec{}
	_ codec.Sizer     = Codec{}
)

func (Codec) Name() string { return "proto" }

func (Codec) Marshal(b []byte, v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("protocodec: needs a proto.Message, got %T", v)
	}
	if !m.ProtoReflect().IsValid() { // a nil *Msg
		return nil, fmt.Errorf("protocodec: cannot encode a nil %T", v)
	}
	return proto.MarshalOptions{}.MarshalAppend(b, m)
}

func (Codec) Unmarshal(data []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("protocodec: needs a proto.Message, got %T", v)
	}
	if !m.ProtoReflect().IsValid() { // a nil *Msg
		return fmt.Errorf("protocodec: cannot decode into a nil %T", v)
	}
	return proto.Unmarshal(data, m)
}

// TypeName is the message's full protobuf name, which client and server
// share whatever Go package each generated it into.
func (Codec) TypeName(v any) string {
	if m, ok := v.(proto.Message); ok {
		return string(m.ProtoReflect().Descriptor().FullName())
	}
	return ""
}

// Size is the message's encoded size.
func (Codec) Size(v any) int {
	if m, ok := v.(proto.Message); ok {
		return proto.Size(m)
	}
	return 0
}
