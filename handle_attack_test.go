package erpc_test

import (
	"context"
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
