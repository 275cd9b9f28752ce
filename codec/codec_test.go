package codec_test

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	. "github.com/erpc-go/erpc/codec"
	"github.com/erpc-go/erpc/codec/protocodec"
)

func TestForAndRoundTrip(t *testing.T) {
	raw := []byte("raw bytes")
	addr := netip.MustParseAddr("10.1.2.3")
	msg := wrapperspb.String("hello")
	tests := []struct {
		v, out any
		name   string
	}{
		{&raw, new([]byte), "raw"},
		{msg, new(wrapperspb.StringValue), "proto"},
		{&addr, new(netip.Addr), "binary"},
	}
	for _, tt := range tests {
		c, err := For(tt.v)
		if err != nil || c.Name() != tt.name {
			t.Fatalf("For(%T) = %v, %v; want %s", tt.v, c, err, tt.name)
		}
		b, err := c.Marshal([]byte("prefix"), tt.v)
		if err != nil || !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatalf("%s marshal: %q, %v", tt.name, b, err)
		}
		if err := c.Unmarshal(b[len("prefix"):], tt.out); err != nil {
			t.Fatalf("%s unmarshal: %v", tt.name, err)
		}
		again, _ := c.Marshal(nil, tt.out)
		if !bytes.Equal(again, b[len("prefix"):]) {
			t.Fatalf("%s: round trip changed the message", tt.name)
		}
	}
	if _, err := For(new(struct{ X int })); err == nil {
		t.Fatal("For accepted a type no codec handles")
	}
	if err := (protocodec.Codec{}).Unmarshal([]byte{0xff, 0xff}, new(wrapperspb.StringValue)); err == nil {
		t.Fatal("proto accepted garbage")
	}
	if n := (protocodec.Codec{}).TypeName(msg); n != "google.protobuf.StringValue" {
		t.Fatalf("type name %q", n)
	}
}

// TestProtoNeedsItsPackage: without codec/protocodec, a protobuf message
// gets an error that names the package to import. (This test binary
// imports it, so the check runs on a type that only looks like a message.)
func TestProtoNeedsItsPackage(t *testing.T) {
	_, err := For(new(lookalike))
	if err == nil || !strings.Contains(err.Error(), "codec/protocodec") {
		t.Fatalf("For(a protobuf-like type) = %v, want an error naming codec/protocodec", err)
	}
}

type lookalike struct{}

func (*lookalike) ProtoReflect() {}
