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

// TestHandleReqOutlivedByInterceptor: Handle promises that req is the
// handler's until it returns. A gRPC-style timeout interceptor (run next
// in a goroutine, return DeadlineExceeded if it is slow) returns before
// the handler does; the wrapper then answers and the endpoint reuses the
// request's memory. The handler, which has not returned, used to read
// that memory while the next request was reassembled into it (a data race
// under -race; without it, the handler saw its req change). The same
// attack on a Register handler checks its *Req. The interceptor's early
// returns are counted: the attack must have happened.
func TestHandleReqOutlivedByInterceptor(t *testing.T) {
	t.Run("Handle", func(t *testing.T) {
		testReqOutlivedByInterceptor(t, func(srv *erpc.Server, changed *atomic.Int64) {
			srv.Handle("Slow", func(ctx context.Context, req []byte) ([]byte, error) {
				first := bytes.Clone(req)
				time.Sleep(10 * time.Millisecond) // the handler has not returned: req is still its to read
				if !bytes.Equal(req, first) {
					changed.Add(1)
				}
				return nil, nil
			}, erpc.Background())
		})
	})
	t.Run("Register", func(t *testing.T) {
		testReqOutlivedByInterceptor(t, func(srv *erpc.Server, changed *atomic.Int64) {
			err := erpc.Register(srv, "Slow", func(ctx context.Context, req *[]byte) (*[]byte, error) {
				first := bytes.Clone(*req)
				time.Sleep(10 * time.Millisecond)
				if !bytes.Equal(*req, first) {
					changed.Add(1)
				}
				return req, nil
			}, erpc.Background())
			if err != nil {
				t.Fatal(err)
			}
		})
	})
}

func testReqOutlivedByInterceptor(t *testing.T, register func(*erpc.Server, *atomic.Int64)) {
	var wg sync.WaitGroup
	var changed, early atomic.Int64
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
			early.Add(1)
			return nil, erpc.Errorf(erpc.DeadlineExceeded, "handler too slow")
		}
	}
	srv := erpc.NewServer(erpc.ChainUnaryInterceptor(timeout))
	register(srv, &changed)
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
	if early.Load() == 0 {
		t.Fatal("the interceptor never returned before the handler: the test attacked nothing")
	}
	if changed.Load() > 0 {
		t.Fatalf("%d handlers saw their req change before they returned (%d early returns)", changed.Load(), early.Load())
	}
	t.Logf("%d of 120 calls answered before their handler returned", early.Load())
}
