package erpc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestContextErrorsSayWhatAndWhere: a call cut short by its deadline or
// by a cancel says which method it called and where, as every other call
// error does, and still matches the context's error.
func TestContextErrorsSayWhatAndWhere(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	srv := serverWith(t, "Slow", func(ctx context.Context, _ []byte) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, erpc.Background())
	ep := n.Listen(t, srv)
	s := dialT(t, n, n.Listen(t, nil), ep)
	for _, c := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, context.DeadlineExceeded},
		{"already past", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), -time.Second)
		}, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		ctx, cancel := c.ctx()
		_, err := s.Call(ctx, "Slow", nil, nil)
		cancel()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `"Slow"`) || !strings.Contains(msg, s.Target()) {
			t.Errorf("%s: %q names neither the method nor the target %s", c.name, msg, s.Target())
		}
	}
}
