package erpc_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestHandleReqOutlivedByInterceptor: Handle promises "req is valid only
// until the handler returns". A gRPC-style timeout interceptor (run next in
// a goroutine, return DeadlineExceeded if it is slow) returns before the
// handler does; the wrapper then answers, the request's memory goes back to
// the engine and the next request is reassembled into it while the
// handler, which has not returned, still reads req (a data race under
// -race; without it, the handler sees its req change). Nothing in Handle's
// or the interceptors' docs says an interceptor must not return before
// next returns.
func TestHandleReqOutlivedByInterceptor(t *testing.T) {
	var wg sync.WaitGroup
	var changed atomic.Int64
	timeout := func(ctx context.Context, req any, info *erpc.UnaryServerInfo, next erpc.UnaryHandler) (any, error) {
		type res struct {
			v   any
			err error
		}
		ch := make(chan res, 1)
		wg.Go(func() { v, err := next(ctx, req); ch <- res{v, err} })
		select {
		case r := <-ch:
			return r.v, r.err
		case <-time.After(2 * time.Millisecond):
			return nil, erpc.Errorf(erpc.DeadlineExceeded, "handler too slow")
		}
	}
	srv := erpc.NewServer(erpc.ChainUnaryInterceptor(timeout))
	srv.Handle("Slow", func(ctx context.Context, req []byte) ([]byte, error) {
		first := bytes.Clone(req)
		time.Sleep(10 * time.Millisecond) // the handler has not returned: req is still its to read
		if !bytes.Equal(req, first) {
			changed.Add(1)
		}
		return nil, nil
	}, erpc.Background())
	n := newMemNet()
	sep := n.Listen(t, srv)
	s := dialT(t, n, n.Listen(t, nil), sep)
	var calls sync.WaitGroup
	for c := range 4 {
		calls.Go(func() {
			for i := range 30 {
				req := bytes.Repeat([]byte{byte(c*30 + i)}, 100)
				call(t, s, "Slow", req)
			}
		})
	}
	calls.Wait()
	wg.Wait()
	if changed.Load() > 0 {
		t.Fatalf("%d handlers saw their req change before they returned", changed.Load())
	}
}
