package erpc_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestKeptBackgroundContextOnLoop: a Background handler's request context,
// used for a blocking Call from the loop (a Session.Go continuation of
// that handler), must fail at once with FailedPrecondition as the package
// doc promises ("A blocking call made on the loop itself could never
// complete, so it fails at once"). The context said offLoop, which
// calledOnLoop used to trust without checking the goroutine, so the Call
// blocked the endpoint's loop until the context's deadline.
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
// goroutine is not on the loop. The request's context used to say "on
// the loop" for as long as the inline handler ran, whatever goroutine
// asked, so a goroutine that called before the handler returned was
// refused.
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

// TestBlockingCallRefusedExactlyOnLoop: a blocking Call fails with
// FailedPrecondition exactly when the goroutine that makes it is the
// endpoint's loop and cannot leave it (a continuation: an inline handler
// hands the loop off first), whatever context it passes. Seeded random requests
// pick the handler (inline or Background), where the nested Call is made
// (the handler's body, a Session.Go continuation, a goroutine the handler
// started before it returns) and its context (the request's own, or one
// of the caller's making); every cell of that grid is visited and counted.
func TestBlockingCallRefusedExactlyOnLoop(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	backend := n.Listen(t, serverWith(t, "Echo", echoHandler))
	var self *erpc.Session
	const (
		inBody = iota
		inContinuation
		inGoroutine
	)
	type cell struct {
		background    bool
		where         int
		requestCtx    bool
		refused, ok   int
		otherFailures int
	}
	var mu sync.Mutex
	cells := map[[3]int]*cell{}
	record := func(background bool, where int, requestCtx bool, err error) {
		key := [3]int{map[bool]int{false: 0, true: 1}[background], where, map[bool]int{false: 0, true: 1}[requestCtx]}
		mu.Lock()
		defer mu.Unlock()
		c := cells[key]
		if c == nil {
			c = &cell{background: background, where: where, requestCtx: requestCtx}
			cells[key] = c
		}
		switch {
		case erpc.CodeOf(err) == erpc.FailedPrecondition:
			c.refused++
		case err == nil:
			c.ok++
		default:
			c.otherFailures++
			t.Errorf("nested Call (background %v, where %d, request ctx %v): %v", background, where, requestCtx, err)
		}
	}
	// The request says where to call and with which context.
	handle := func(background bool) func(r erpc.Request) {
		return func(r erpc.Request) {
			d := r.Data()
			where, requestCtx := int(d[0]), d[1] == 1
			nested := func() {
				ctx := r.Context()
				if !requestCtx {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
				}
				_, err := self.Call(ctx, "Echo", []byte("nested"), nil)
				record(background, where, requestCtx, err)
				r.Respond(nil)
			}
			switch where {
			case inBody:
				nested()
			case inContinuation:
				self.Go("Echo", []byte("x"), nil, func([]byte, error) { nested() })
			case inGoroutine:
				started := make(chan struct{})
				go func() { close(started); nested() }()
				<-started // still running when the goroutine calls, most of the time
				runtime.Gosched()
			}
		}
	}
	h := erpc.NewServer()
	h.HandleRaw("Inline", handle(false))
	h.HandleRaw("Bg", handle(true), erpc.Background())
	ep := n.Listen(t, h)
	self = dialT(t, n, ep, backend)
	s := dialT(t, n, n.Listen(t, nil), ep)
	rng := rand.New(rand.NewPCG(27, 2))
	for range 240 {
		method := []string{"Inline", "Bg"}[rng.IntN(2)]
		req := []byte{byte(rng.IntN(3)), byte(rng.IntN(2))}
		if _, err := call(t, s, method, req); err != nil {
			t.Fatalf("%s %v: %v", method, req, err)
		}
	}
	if len(cells) != 12 {
		t.Fatalf("visited %d of the 12 cells", len(cells))
	}
	for _, c := range cells {
		// An inline handler's body hands the loop off before it blocks
		// (WithHandoff): only a continuation is refused.
		onLoop := c.where == inContinuation
		if onLoop && c.ok > 0 || !onLoop && c.refused > 0 {
			t.Errorf("background %v, where %d, request ctx %v (on the loop: %v): %d refused, %d went through",
				c.background, c.where, c.requestCtx, onLoop, c.refused, c.ok)
		}
	}
}
