// Package codec turns typed messages into bytes for erpc's typed API
// (erpc.Register and erpc.Invoke). The codec is chosen by the message type:
//
//   - *[]byte: Raw, the bytes themselves;
//   - a protobuf message (proto.Message): Proto;
//   - a type with MarshalBinary and UnmarshalBinary: Binary.
//
// The core of erpc moves []byte only; codecs sit on top, so the raw path
// never pays for them.
package codec

import (
	"encoding"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Codec marshals and unmarshals one kind of message.
type Codec interface {
	Name() string
	// Marshal appends the encoding of v to b.
	Marshal(b []byte, v any) ([]byte, error)
	// Unmarshal decodes data into v. It must not keep data.
	Unmarshal(data []byte, v any) error
}

// For returns the codec for messages like v, a pointer to a message type.
func For(v any) (Codec, error) {
	switch v.(type) {
	case *[]byte:
		return Raw{}, nil
	case proto.Message:
		return Proto{}, nil
	case interface {
		encoding.BinaryMarshaler
		encoding.BinaryUnmarshaler
	}:
		return Binary{}, nil
	}
	return nil, fmt.Errorf("codec: no codec for %T: use *[]byte, a protobuf message, or a type with MarshalBinary and UnmarshalBinary", v)
}

// Raw passes *[]byte through.
type Raw struct{}

func (Raw) Name() string { return "raw" }

func (Raw) Marshal(b []byte, v any) ([]byte, error) {
	p, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("codec: raw needs *[]byte, got %T", v)
	}
	return append(b, *p...), nil
}

func (Raw) Unmarshal(data []byte, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("codec: raw needs *[]byte, got %T", v)
	}
	*p = append((*p)[:0], data...)
	return nil
}

// Proto encodes protobuf messages.
type Proto struct{}

func (Proto) Name() string { return "proto" }

func (Proto) Marshal(b []byte, v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("codec: proto needs a proto.Message, got %T", v)
	}
	return proto.MarshalOptions{}.MarshalAppend(b, m)
}

func (Proto) Unmarshal(data []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("codec: proto needs a proto.Message, got %T", v)
	}
	return proto.Unmarshal(data, m)
}

// Binary uses the type's MarshalBinary (or AppendBinary) and
// UnmarshalBinary.
type Binary struct{}

func (Binary) Name() string { return "binary" }

func (Binary) Marshal(b []byte, v any) ([]byte, error) {
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
	return m.UnmarshalBinary(data)
}
