package erpc_test

import (
	"context"
	"testing"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// BenchmarkTypedCall: a protobuf call through Register and Invoke over
// memnet (a 32-byte string each way): what the typed API adds to a raw
// call, allocations above all.
func BenchmarkTypedCall(b *testing.B) {
	net := memnet.NewNetwork(1, memnet.LinkConfig{})
	st, _ := net.Listen("srv")
	ct, _ := net.Listen("cli")
	srv := erpc.NewServer()
	if err := erpc.Register(srv, "Echo", func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return req, nil
	}); err != nil {
		b.Fatal(err)
	}
	sep, err := srv.Listen("", erpc.WithTransport(st))
	if err != nil {
		b.Fatal(err)
	}
	defer sep.Close()
	cep, err := erpc.Listen("", erpc.WithTransport(ct))
	if err != nil {
		b.Fatal(err)
	}
	defer cep.Close()
	ctx := context.Background()
	s, err := cep.Dial(ctx, "mem://srv")
	if err != nil {
		b.Fatal(err)
	}
	req := wrapperspb.String("0123456789abcdef0123456789abcdef")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := erpc.Invoke[wrapperspb.StringValue](ctx, s, "Echo", req); err != nil {
			b.Fatal(err)
		}
	}
}
