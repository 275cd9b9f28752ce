// Package codec turns typed messages into bytes for erpc's typed API
// (erpc.Register and erpc.Invoke). The codec is chosen by the message type:
//
//   - *[]byte: Raw, the bytes themselves;
//   - a type with MarshalBinary (or AppendBinary) and UnmarshalBinary:
//     Binary;
//   - a protobuf message: the codec of package codec/protocodec, once a
//     program imports it (generated erpc stubs do);
//   - anything a codec added with Register accepts.
//
// A nil message (a nil pointer) is an error from every built-in codec,
// both to encode and to decode into, never a panic: erpc.Invoke refuses a
// nil request with InvalidArgument before sending it.
//
// This package needs only the standard library, so erpc's core depends on
// no serialization library; the raw path never pays for codecs at all.
package codec

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
)

// Codec marshals and unmarshals one kind of message.
type Codec interface {
	Name() string
	// Marshal appends the encoding of v to b.
	Marshal(b []byte, v any) ([]byte, error)
	// Unmarshal decodes data into v. It must not keep data.
	Unmarshal(data []byte, v any) error
}

// TypeNamer is implemented by codecs whose messages have a name that is the
// same in every program that uses them, such as a protobuf message's full
// name. The typed API puts the names of a method's request and response
// types into the method's ID on the wire, so a client and a server that
// disagree on them get an error instead of a message decoded into the
// wrong type.
type TypeNamer interface {
	TypeName(v any) string
}

// Sizer is implemented by codecs that can tell a message's encoded size
// cheaply, so the typed API can encode it straight into the response's
// buffer.
type Sizer interface {
	Size(v any) int
}

var (
	regMu sync.RWMutex
	reg   []func(v any) (Codec, bool)
)

// Register adds a codec for the message types match accepts. Codecs added
// later are tried first; the built-in ones (Raw, Binary) last.
func Register(match func(v any) (Codec, bool)) {
	regMu.Lock()
	defer regMu.Unlock()
	reg = append(reg, match)
}

// For returns the codec for messages like v, a pointer to a message type.
func For(v any) (Codec, error) {
	regMu.RLock()
	for i := len(reg) - 1; i >= 0; i-- {
		if c, ok := reg[i](v); ok {
			regMu.RUnlock()
			return c, nil
		}
	}
	regMu.RUnlock()
	switch v.(type) {
	case *[]byte:
		return Raw{}, nil
	case interface {
		encoding.BinaryMarshaler
		encoding.BinaryUnmarshaler
	}:
		return Binary{}, nil
	}
	if _, ok := reflect.TypeOf(v).MethodByName("ProtoReflect"); ok {
		return nil, fmt.Errorf("codec: %T is a protobuf message: import github.com/erpc-go/erpc/codec/protocodec to encode it", v)
	}
	return nil, fmt.Errorf("codec: no codec for %T: use *[]byte, a type with MarshalBinary and UnmarshalBinary, "+
		"a protobuf message (with codec/protocodec), or Register one", v)
}

// Raw passes *[]byte through.
type Raw struct{}

func (Raw) Name() string { return "raw" }

func (Raw) Marshal(b []byte, v any) ([]byte, error) {
	p, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("codec: raw needs *[]byte, got %T", v)
	}
	if p == nil {
		return nil, errNilMessage("raw", v)
	}
	return append(b, *p...), nil
}

func (Raw) Unmarshal(data []byte, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("codec: raw needs *[]byte, got %T", v)
	}
	if p == nil {
		return errNilTarget("raw", v)
	}
	*p = append((*p)[:0], data...)
	return nil
}

// Binary uses the type's MarshalBinary (or AppendBinary) and
// UnmarshalBinary.
type Binary struct{}

func (Binary) Name() string { return "binary" }

func (Binary) Marshal(b []byte, v any) ([]byte, error) {
	if isNil(v) {
		return nil, errNilMessage("binary", v)
	}
	switch m := v.(type) {
	case encoding.BinaryAppender:
		return m.AppendBinary(b)
	case encoding.BinaryMarshaler:
		data, err := m.MarshalBinary()
		return append(b, data...), err
	}
	return nil, fmt.Errorf("codec: binary needs MarshalBinary, got %T", v)
}

func (Binary) Unmarshal(data []byte, v any) error {
	m, ok := v.(encoding.BinaryUnmarshaler)
	if !ok {
		return fmt.Errorf("codec: binary needs UnmarshalBinary, got %T", v)
	}
	if isNil(v) {
		return errNilTarget("binary", v)
	}
	return m.UnmarshalBinary(data)
}

// JSON encodes any value with encoding/json. It is never chosen by type:
// ask for it with erpc.WithCodec and erpc.WithCallCodec (a JSON gateway, a
// client in another language, a human with a terminal).
type JSON struct{}

func (JSON) Name() string { return "json" }

func (JSON) Marshal(b []byte, v any) ([]byte, error) {
	if isNil(v) {
		return nil, errNilMessage("json", v)
	}
	data, err := json.Marshal(v)
	return append(b, data...), err
}

func (JSON) Unmarshal(data []byte, v any) error {
	if isNil(v) {
		return errNilTarget("json", v)
	}
	return json.Unmarshal(data, v)
}

// isNil reports whether v is nil or a nil pointer: no message to encode
// and nowhere to decode one. Every built-in codec refuses it with an
// error, never a panic, so the typed API can answer InvalidArgument.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func errNilMessage(codec string, v any) error {
	return fmt.Errorf("codec: %s: cannot encode a nil %T", codec, v)
}

func errNilTarget(codec string, v any) error {
	return fmt.Errorf("codec: %s: cannot decode into a nil %T", codec, v)
}
