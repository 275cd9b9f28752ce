package erpc_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
)

// TestInvokeNilRequest: a nil typed request is one Invoke cannot encode:
// refused with InvalidArgument before it is sent (NotExecuted), never a
// panic, for every codec, with and without client interceptors; a nil
// response target set by an interceptor is an error, not a panic.
func TestInvokeNilRequest(t *testing.T) {
	var ran atomic.Int32
	srv := erpc.NewServer()
	if err := erpc.Register(srv, "Bytes", func(_ context.Context, req *[]byte) (*[]byte, error) { ran.Add(1); return req, nil }); err != nil {
		t.Fatal(err)
	}
	if err := erpc.Register(srv, "Proto", func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		ran.Add(1)
		return req, nil
	}); err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://typednil-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var nilTarget int
	icpt := func(ctx context.Context, method string, req, resp any, s *erpc.Session, invoke erpc.UnaryInvoker) error {
		if method == "Bytes" && req != nil && resp != nil {
			if p, _ := req.(*[]byte); p != nil {
				nilTarget++
				return invoke(ctx, method, req, (*[]byte)(nil))
			}
		}
		return invoke(ctx, method, req, resp)
	}
	for _, opts := range [][]erpc.Option{nil, {erpc.WithUnaryClientInterceptors(icpt)}} {
		cli, err := erpc.Listen("mem://", opts...)
		if err != nil {
			t.Fatal(err)
		}
		s, err := cli.Dial(ctx, ep.Target())
		if err != nil {
			t.Fatal(err)
		}
		calls := []func() error{
			func() error { _, err := erpc.Invoke[[]byte](ctx, s, "Bytes", (*[]byte)(nil)); return err },
			func() error {
				_, err := erpc.Invoke[wrapperspb.StringValue](ctx, s, "Proto", (*wrapperspb.StringValue)(nil))
				return err
			},
		}
		for i, c := range calls {
			err := noPanic(t, c)
			var e *erpc.Error
			if !errors.As(err, &e) || e.Code != erpc.InvalidArgument || !erpc.NotExecuted(err) {
				t.Errorf("interceptors %v, nil request %d: got %v; want InvalidArgument, NotExecuted", opts != nil, i, err)
			}
		}
		if opts != nil {
			err := noPanic(t, func() error { _, err := erpc.Invoke[[]byte](ctx, s, "Bytes", &[]byte{1}); return err })
			if nilTarget != 1 || erpc.CodeOf(err) != erpc.Internal {
				t.Errorf("a nil response target (%d set): got %v; want Internal", nilTarget, err)
			}
		}
		s.Close()
		cli.Close()
	}
	if ran.Load() != 1 {
		t.Errorf("handlers ran %d times; want 1 (only the call with a nil response target)", ran.Load())
	}
}

func noPanic(t *testing.T, f func() error) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("panicked: %v", p)
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	return f()
}
