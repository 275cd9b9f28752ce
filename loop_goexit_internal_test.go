package erpc

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport/memnet"
)

// TestGoexitInContinuation: a continuation that ends its goroutine
// (t.FailNow in a test's continuation does) takes the loop with it; the
// loop's published g (watch.g) and since stay set, so a later goroutine
// that reuses the dead loop's g passes startOnLoop's check and touches the
// engine off the loop.
func TestGoexitInContinuation(t *testing.T) {
	p := newUnclosedPair(t)
	ran := make(chan struct{})
	p.sess.Go("Echo", []byte("x"), nil, func(_ []byte, err error) {
		close(ran)
		runtime.Goexit()
	})
	<-ran
	time.Sleep(20 * time.Millisecond)
	t.Logf("after Goexit: watch.since=%d watch.g=%#x", p.cep.watch.since.Load(), p.cep.watch.g.Load())
	// Find a goroutine that reuses the dead loop's g.
	dead := p.cep.watch.g.Load()
	var reused atomic.Bool
	var direct atomic.Int64
	for i := 0; i < 20000 && !reused.Load(); i++ {
		ch := make(chan struct{})
		go func() {
			defer close(ch)
			if dead != 0 && loopG() == dead {
				reused.Store(true)
				c := getCall(p.sess, "Echo", []byte("y"), nil)
				c.cont = func([]byte, error) {}
				if p.cep.startOnLoop(c) {
					direct.Add(1)
				}
			}
		}()
		<-ch
	}
	t.Logf("a goroutine reused the dead loop's g: %v; calls it started directly on the engine, off any loop: %d", reused.Load(), direct.Load())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := p.sess.Call(ctx, "Echo", []byte("z"), nil)
	t.Logf("a call after the continuation's Goexit: %v", err)
	closed := make(chan struct{})
	go func() { p.cep.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Errorf("Close has not returned after 3 s")
	}
	if direct.Load() > 0 {
		t.Fatalf("a goroutine that is not the loop started %d calls directly (startOnLoop true)", direct.Load())
	}
	if err != nil {
		t.Fatalf("the endpoint no longer works after a continuation called runtime.Goexit: %v", err)
	}
}

// newUnclosedPair is newDirectPair without closing the client endpoint at
// cleanup (a test whose loop died would hang there).
func newUnclosedPair(t *testing.T) *directPair {
	t.Helper()
	net := memnet.NewNetwork(1, memnet.LinkConfig{})
	str, err := net.Listen("echo")
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := net.Listen("fwd")
	if err != nil {
		t.Fatal(err)
	}
	echo := NewServer()
	echo.HandleRaw("Echo", func(r Request) { r.Respond(r.Data()) })
	sep, err := echo.Listen("", WithTransport(str))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sep.Close() })
	cep, err := NewServer().Listen("", WithTransport(ctr))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cep.Dial(ctx, sep.Target())
	if err != nil {
		t.Fatal(err)
	}
	return &directPair{net: net, cep: cep, sess: s}
}

// TestGoexitInPostKeepsBatch: a Post function that calls runtime.Goexit,
// in the middle of a batch of commands the loop took at once: the loop
// goes on on a fresh goroutine, runs the rest of the batch and what was
// posted after it, in order, and Close returns.
func TestGoexitInPostKeepsBatch(t *testing.T) {
	p := newUnclosedPair(t)
	const rounds, after = 20, 5
	for round := range rounds {
		hold := make(chan struct{})
		if err := p.cep.Post(func() { <-hold }); err != nil { // the next posts make one batch
			t.Fatal(err)
		}
		exited := make(chan struct{})
		var order []int // the loop's own: only Post functions touch it
		if err := p.cep.Post(func() { close(exited); runtime.Goexit() }); err != nil {
			t.Fatal(err)
		}
		for i := range after {
			if err := p.cep.Post(func() { order = append(order, i) }); err != nil {
				t.Fatal(err)
			}
		}
		close(hold)
		<-exited
		ran := make(chan []int, 1)
		if err := p.cep.Post(func() { ran <- order }); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-ran:
			if len(got) != after {
				t.Fatalf("round %d: the batch after the Goexit ran %v, want %d functions in order", round, got, after)
			}
			for i, v := range got {
				if v != i {
					t.Fatalf("round %d: out of order: %v", round, got)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the loop ran nothing after a Post function's Goexit", round)
		}
	}
	closeWithin(t, p.cep, 5*time.Second)
}

// TestGoexitInContinuationAtClose: a continuation that the endpoint's
// Close fails (its call pending) calls runtime.Goexit while the loop
// stops: the stop finishes on a fresh goroutine and Close returns.
func TestGoexitInContinuationAtClose(t *testing.T) {
	p := newUnclosedPair(t)
	p.net.SetDefault(memnet.LinkConfig{Down: true}) // calls stay pending
	var exits atomic.Int64
	const calls = 10
	for range calls {
		p.sess.Go("Echo", []byte("x"), nil, func(_ []byte, err error) {
			exits.Add(1)
			runtime.Goexit()
		})
	}
	time.Sleep(20 * time.Millisecond)
	closeWithin(t, p.cep, 5*time.Second)
	if exits.Load() != calls {
		t.Fatalf("%d of %d continuations ran (and called Goexit)", exits.Load(), calls)
	}
}

func closeWithin(t *testing.T, ep *Endpoint, d time.Duration) {
	t.Helper()
	closed := make(chan struct{})
	go func() { ep.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(d):
		t.Fatalf("Close has not returned after %v", d)
	}
}
