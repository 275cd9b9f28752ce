package erpc_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestKeptBackgroundContextOnLoop: a Background handler's request context,
// used for a blocking Call from the loop (a Session.Go continuation of
// that handler), must fail at once with FailedPrecondition as the package
// doc promises ("A blocking call made on the loop itself could never
// complete, so it fails at once"). The context says offLoop, which
// calledOnLoop trusts without checking the goroutine, so the Call blocks
// the endpoint's loop until the context's deadline.
func TestKeptBackgroundContextOnLoop(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	backend := n.Listen(t, serverWith(t, "Echo", echoHandler))
	var self *erpc.Session
	results := make(chan error, 1)
	h := erpc.NewServer()
	h.HandleRaw("Bg", func(r erpc.Request) {
		ctx := r.Context() // a background request's context: "off the loop"
		self.Go("Echo", []byte("x"), nil, func([]byte, error) {
			// on the loop now
			_, err := self.Call(ctx, "Echo", []byte("y"), nil)
			results <- err
			r.Respond(nil)
		})
	}, erpc.Background())
	ep := n.Listen(t, h)
	self = dialT(t, n, ep, backend)
	s := dialT(t, n, n.Listen(t, nil), ep)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, cerr := s.Call(ctx, "Bg", nil, nil)
	err := <-results
	d := time.Since(start)
	if erpc.CodeOf(err) != erpc.FailedPrecondition || d > time.Second {
		t.Fatalf("a blocking Call on the loop with a background request's context: %v after %v (call: %v), want FailedPrecondition at once", err, d.Round(time.Millisecond), cerr)
	}
}

// TestInlineHandleAnsweredFromGoroutineCalls: HandleRaw promises a handler
// may answer "later (after nested calls, say) and from any goroutine". An
// inline handler that gives its Request to a goroutine, which makes a
// blocking nested Call with the request's context and answers with its
// result, must not see that Call fail with FailedPrecondition: the
// goroutine is not on the loop. The request's context says "on the loop"
// for as long as the inline handler runs (runningInline), whatever
// goroutine asks, so a goroutine that calls before the handler returned
// is refused.
func TestInlineHandleAnsweredFromGoroutineCalls(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	backend := n.Listen(t, serverWith(t, "Echo", echoHandler))
	var self *erpc.Session
	var refused, ok atomic.Int64
	h := erpc.NewServer()
	h.HandleRaw("Nested", func(r erpc.Request) {
		started := make(chan struct{})
		go func() {
			close(started)
			resp, err := self.Call(r.Context(), "Echo", []byte("nested"), nil)
			if erpc.CodeOf(err) == erpc.FailedPrecondition {
				refused.Add(1)
			} else if err == nil {
				ok.Add(1)
			}
			if err != nil {
				r.RespondError(err)
				return
			}
			r.Respond(resp)
		}()
		<-started // a handler that does a little more work before it returns
		for range 50 {
			runtime.Gosched()
		}
	})
	ep := n.Listen(t, h)
	self = dialT(t, n, ep, backend)
	s := dialT(t, n, n.Listen(t, nil), ep)
	var firstErr error
	for range 200 {
		if _, err := call(t, s, "Nested", nil); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if refused.Load() > 0 {
		t.Fatalf("%d of 200 nested Calls made off the loop, from a goroutine given an inline request, were refused as on the loop (%d succeeded); first error at the client: %v",
			refused.Load(), ok.Load(), firstErr)
	}
}
