package codec_test

import (
	"net/netip"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	. "github.com/erpc-go/erpc/codec"
	"github.com/erpc-go/erpc/codec/protocodec"
)

// A nil pointer, as a request to encode or as a target to decode into, is
// an error from every built-in codec, never a panic: the typed API turns
// the error into InvalidArgument before anything is sent.
func TestNilPointersAreErrors(t *testing.T) {
	good := map[string][]byte{
		"raw": []byte("x"), "binary": mustBinary(t), "json": []byte(`"x"`), "proto": mustProto(t),
	}
	tests := []struct {
		c   Codec
		nil any
	}{
		{Raw{}, (*[]byte)(nil)},
		{Binary{}, (*netip.Addr)(nil)},
		{JSON{}, (*struct{ A int })(nil)},
		{JSON{}, nil},
		{protocodec.Codec{}, (*wrapperspb.StringValue)(nil)},
	}
	for _, tt := range tests {
		name := tt.c.Name()
		if b, err := noPanic(t, name+" Marshal", func() ([]byte, error) { return tt.c.Marshal(nil, tt.nil) }); err == nil {
			t.Errorf("%s: Marshal(nil %T) = %q, nil error; want an error", name, tt.nil, b)
		} else if !strings.Contains(err.Error(), "nil") {
			t.Errorf("%s: Marshal(nil %T) error %q does not say nil", name, tt.nil, err)
		}
		if _, err := noPanic(t, name+" Unmarshal", func() ([]byte, error) { return nil, tt.c.Unmarshal(good[name], tt.nil) }); err == nil {
			t.Errorf("%s: Unmarshal into nil %T: nil error; want an error", name, tt.nil)
		}
	}
}

func noPanic(t *testing.T, what string, f func() ([]byte, error)) (b []byte, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s panicked: %v", what, p)
			err = nil
			b = []byte("panicked")
		}
	}()
	return f()
}

func mustBinary(t *testing.T) []byte {
	b, err := netip.MustParseAddr("10.0.0.1").MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustProto(t *testing.T) []byte {
	b, err := (protocodec.Codec{}).Marshal(nil, wrapperspb.String("x"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
