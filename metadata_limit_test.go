package erpc_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/erpc-go/erpc"
)

// TestRequestMetadataOverLimit: a call whose metadata would pass
// MaxMetadataSize is refused by the caller, naming the limit, before it
// is sent (NotExecuted), instead of reaching the server, which refused it
// as malformed (InvalidArgument "malformed request metadata"); metadata
// just under the limit still arrives whole.
func TestRequestMetadataOverLimit(t *testing.T) {
	checkLeaks(t)
	var ran atomic.Int64
	srv := serverWith(t, "MD", func(ctx context.Context, _ []byte) ([]byte, error) {
		ran.Add(1)
		md, _ := erpc.IncomingMetadata(ctx)
		return []byte(md.Get("k")), nil
	})
	n := newMemNet()
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, srv))
	for _, c := range []struct {
		size int
		ok   bool
	}{{1000, true}, {erpc.MaxMetadataSize - 64, true}, {erpc.MaxMetadataSize, false}, {4 * erpc.MaxMetadataSize, false}} {
		v := strings.Repeat("v", c.size)
		ctx := erpc.NewOutgoingContext(context.Background(), erpc.Pairs("k", v))
		before := ran.Load()
		resp, err := s.Call(ctx, "MD", nil, nil)
		switch {
		case c.ok && (err != nil || string(resp) != v):
			t.Errorf("%d bytes: %d bytes back, %v", c.size, len(resp), err)
		case !c.ok && (erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "MaxMetadataSize") ||
			!erpc.NotExecuted(err) || ran.Load() != before):
			t.Errorf("%d bytes: %v (ran %d), want InvalidArgument naming MaxMetadataSize, never sent", c.size, err, ran.Load()-before)
		}
	}
}
