package erpc_test

import (
	"context"
	"testing"

	"github.com/erpc-go/erpc"
)

// TestMetadataRoundTrip: pairs in the caller's context reach the handler,
// in its context and on the request, beside the request's own bytes, which
// are unchanged; a call without metadata carries none; the handler knows
// the caller's address.
func TestMetadataRoundTrip(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	type seen struct {
		md      erpc.Metadata
		req     string
		hasPeer bool
	}
	got := make(chan seen, 4)
	h := erpc.NewServer()
	h.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) {
		md, _ := erpc.IncomingMetadata(ctx)
		_, hasPeer := erpc.PeerFromContext(ctx)
		got <- seen{md, string(req), hasPeer}
		return req, nil
	})
	h.HandleRaw("Raw", func(r erpc.Request) {
		got <- seen{r.Metadata(), string(r.Data()), r.Peer().IsValid()}
		r.Respond(r.Data())
	})
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, h))
	ctx := erpc.AppendToOutgoingContext(context.Background(), "Trace-ID", "abc", "k", "1", "k", "2")
	for _, method := range []string{"Echo", "Raw"} {
		resp, err := s.Call(ctx, method, []byte("payload"), nil)
		if err != nil || string(resp) != "payload" {
			t.Fatalf("%s: %q %v", method, resp, err)
		}
		g := <-got
		if g.req != "payload" || g.md.Get("trace-id") != "abc" || len(g.md["k"]) != 2 || g.md["k"][1] != "2" || !g.hasPeer {
			t.Fatalf("%s: handler saw %+v", method, g)
		}
		if _, err := s.Call(context.Background(), method, []byte("plain"), nil); err != nil {
			t.Fatal(err)
		}
		if g := <-got; g.md != nil || g.req != "plain" {
			t.Fatalf("%s without metadata: handler saw %+v", method, g)
		}
	}
}
