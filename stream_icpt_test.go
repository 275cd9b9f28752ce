package erpc_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/erpc-go/erpc"
)

type ctxKey struct{}

// wrappedServerStream replaces its stream's context, as gRPC's
// interceptors commonly do.
type wrappedServerStream struct {
	erpc.ServerStream
	ctx context.Context
}

func (w wrappedServerStream) Context() context.Context { return w.ctx }

type countingClientStream struct {
	erpc.ClientStream
	recvs *atomic.Int64
}

func (c countingClientStream) Recv() ([]byte, error) {
	c.recvs.Add(1)
	return c.ClientStream.Recv()
}

// TestStreamInterceptors: server stream interceptors run outermost first,
// see the method, and may wrap the stream the handler gets; client ones
// see the opening, may add metadata, and wrap the stream the caller gets.
func TestStreamInterceptors(t *testing.T) {
	checkLeaks(t)
	var order []string
	srv := erpc.NewServer(erpc.ChainStreamInterceptor(
		func(s erpc.ServerStream, info *erpc.StreamServerInfo, next erpc.StreamHandler) error {
			order = append(order, "outer:"+info.Method)
			return next(wrappedServerStream{s, context.WithValue(s.Context(), ctxKey{}, "v")})
		},
		func(s erpc.ServerStream, info *erpc.StreamServerInfo, next erpc.StreamHandler) error {
			order = append(order, "inner")
			err := next(s)
			if err == nil {
				s.SetTrailer(erpc.Pairs("icpt", "saw-ok"))
			}
			return err
		}))
	must(t, srv.HandleStream("S", func(s erpc.ServerStream) error {
		md, _ := erpc.IncomingMetadata(s.Context())
		return s.Send([]byte(s.Context().Value(ctxKey{}).(string) + md.Get("added")))
	}))
	n := newMemNet()
	sep := n.Listen(t, srv)
	var opened []string
	var recvs atomic.Int64
	cli := n.Listen(t, nil, erpc.WithStreamClientInterceptors(
		func(ctx context.Context, method string, s *erpc.Session, open erpc.Streamer) (erpc.ClientStream, error) {
			opened = append(opened, method)
			st, err := open(erpc.AppendToOutgoingContext(ctx, "added", "-md"), method)
			if err != nil {
				return nil, err
			}
			return countingClientStream{st, &recvs}, nil
		}))
	sess := dialT(t, n, cli, sep)
	st, err := sess.NewStream(context.Background(), "S")
	must(t, err)
	if m, err := st.Recv(); err != nil || string(m) != "v-md" {
		t.Fatalf("message %q, %v", m, err)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatal(err)
	}
	if st.Trailer().Get("icpt") != "saw-ok" {
		t.Fatalf("trailer %v", st.Trailer())
	}
	if len(order) != 2 || order[0] != "outer:S" || order[1] != "inner" || len(opened) != 1 || recvs.Load() != 2 {
		t.Fatalf("server chain %v, client saw %v and %d Recvs", order, opened, recvs.Load())
	}
}
