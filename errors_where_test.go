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
	// The server's handler can end the call itself, before the caller's
	// context does: its answer names the call too (CI once got the
	// server's DeadlineExceeded before the client's timer fired).
	for method, err := range map[string]error{"SaysDeadline": context.DeadlineExceeded, "SaysCanceled": context.Canceled} {
		if err := srv.Handle(method, func(context.Context, []byte) ([]byte, error) { return nil, err }); err != nil {
			t.Fatal(err)
		}
	}
	ep := n.Listen(t, srv)
	s := dialT(t, n, n.Listen(t, nil), ep)
	for _, c := range []struct {
		name, method string
		ctx          func() (context.Context, context.CancelFunc)
		want         error
	}{
		{"server says deadline", "SaysDeadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Minute)
		}, context.DeadlineExceeded},
		{"server says canceled", "SaysCanceled", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, context.Canceled},
		{"deadline", "Slow", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, context.DeadlineExceeded},
		{"already past", "Slow", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), -time.Second)
		}, context.DeadlineExceeded},
		{"cancel", "Slow", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		ctx, cancel := c.ctx()
		_, err := s.Call(ctx, c.method, nil, nil)
		cancel()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `"`+c.method+`"`) || !strings.Contains(msg, s.Target()) {
			t.Errorf("%s: %q names neither the method nor the target %s", c.name, msg, s.Target())
		}
	}
}
