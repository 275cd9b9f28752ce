package erpc_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// Handlers registered the plain way run inline on the event loop, and may
// block: one that blocks loses the loop to a fresh goroutine (handoff) and
// finishes as a Background handler would. These tests use no option: the
// default endpoint must behave so.

// concurrency counts handlers running at once and the most seen.
type concurrency struct{ now, max atomic.Int64 }

func (c *concurrency) enter() {
	n := c.now.Add(1)
	for m := c.max.Load(); n > m && !c.max.CompareAndSwap(m, n); m = c.max.Load() {
	}
}

func (c *concurrency) leave() { c.now.Add(-1) }

// TestBlockingHandlersRunConcurrently: ten concurrent calls (over two
// sessions) to a handler that blocks (registered with Handle, or typed with Register, and no
// option) all run at once: each blocks until all ten are in (or 2 s
// pass), and the most seen running together must be ten. With handlers
// holding the loop, the first one blocked the rest: one at a time.
func TestBlockingHandlersRunConcurrently(t *testing.T) {
	const calls = 10
	for _, form := range []string{"Handle", "Register"} {
		t.Run(form, func(t *testing.T) {
			checkLeaks(t)
			var c concurrency
			all := make(chan struct{})
			var closeAll sync.Once
			block := func() {
				c.enter()
				defer c.leave()
				if c.now.Load() >= calls {
					closeAll.Do(func() { close(all) })
				}
				select {
				case <-all:
					time.Sleep(100 * time.Millisecond) // a database call, say
				case <-time.After(2 * time.Second):
				}
			}
			srv := erpc.NewServer()
			var err error
			if form == "Handle" {
				err = srv.Handle("Block", func(_ context.Context, req []byte) ([]byte, error) { block(); return req, nil })
			} else {
				err = erpc.Register(srv, "Block", func(_ context.Context, req *[]byte) (*[]byte, error) { block(); return req, nil })
			}
			if err != nil {
				t.Fatal(err)
			}
			n := newMemNet()
			ep := n.Listen(t, srv)
			// Two sessions: one carries at most 8 calls at once (its window).
			sessions := []*erpc.Session{dialT(t, n, n.Listen(t, nil), ep), dialT(t, n, n.Listen(t, nil), ep)}
			var wg sync.WaitGroup
			errs := make(chan error, calls)
			for i := range calls {
				s := sessions[i%2]
				wg.Go(func() {
					var err error
					if form == "Handle" {
						_, err = call(t, s, "Block", []byte("x"))
					} else {
						_, err = erpc.Invoke[[]byte](context.Background(), s, "Block", &[]byte{'x'})
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("call: %v", err)
				}
			}
			if m := c.max.Load(); m != calls {
				t.Fatalf("at most %d of %d blocking handlers ran at once, want all: a blocking handler holds the loop", m, calls)
			}
		})
	}
}

// TestOtherSessionServedWhileHandlerBlocks: while one session's call
// blocks in its handler, a second session's echo calls complete. The
// blocked handler waits until the second session has completed 100
// calls, or 3 s: the count made during the block must reach 100.
func TestOtherSessionServedWhileHandlerBlocks(t *testing.T) {
	checkLeaks(t)
	const want = 100
	var during atomic.Int64
	started := make(chan struct{})
	reached := make(chan struct{})
	srv := erpc.NewServer()
	if err := srv.Handle("Block", func(_ context.Context, req []byte) ([]byte, error) {
		close(started)
		select {
		case <-reached:
		case <-time.After(3 * time.Second):
		}
		return req, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Handle("Echo", echoHandler); err != nil {
		t.Fatal(err)
	}
	n := newMemNet()
	ep := n.Listen(t, srv)
	blocked := dialT(t, n, n.Listen(t, nil), ep)
	other := dialT(t, n, n.Listen(t, nil), ep)
	if _, err := call(t, other, "Echo", []byte("warm")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := call(t, blocked, "Block", nil)
		done <- err
	}()
	<-started
	var blockErr error
	blockDone := false
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	for !blockDone {
		select {
		case blockErr = <-done:
			blockDone = true
			continue
		default:
		}
		if _, err := other.Call(ctx, "Echo", []byte("e"), nil); err != nil {
			t.Fatalf("echo on the other session while a handler blocks: %v", err)
		}
		if during.Add(1) == want {
			close(reached)
		}
	}
	if blockErr != nil {
		t.Fatalf("the blocking call: %v", blockErr)
	}
	if d := during.Load(); d < want {
		t.Fatalf("the other session completed %d echo calls while a handler blocked, want %d", d, want)
	}
}

// TestLongBlockingHandlerKeepsSessionUp: a handler that sleeps 1 s, ten
// calls at once over UDP (two sessions). Held on the loop, the ten ran one after the
// other and the loop sent nothing for 10 s (its answers wait for the end
// of the batch, and so do the credit returns), so the client gave the
// server up as unreachable at its 2 s failure timeout. Every call must
// succeed.
func TestLongBlockingHandlerKeepsSessionUp(t *testing.T) {
	checkLeaks(t)
	const calls = 10
	var c concurrency
	srv := serverWith(t, "Sleep", func(_ context.Context, req []byte) ([]byte, error) {
		c.enter()
		defer c.leave()
		time.Sleep(time.Second)
		return req, nil
	})
	ep := listenT(t, srv, "127.0.0.1:0")
	var sessions []*erpc.Session
	for range 2 { // a session carries 8 calls at once
		cli := listenT(t, nil, "127.0.0.1:0")
		s, err := cli.Dial(context.Background(), ep.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sessions = append(sessions, s)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range calls {
		s := sessions[i%2]
		wg.Go(func() {
			if _, err := call(t, s, "Sleep", []byte("x")); err != nil {
				failed.Add(1)
				t.Errorf("call to a handler that sleeps 1 s: %v", err)
			}
		})
	}
	wg.Wait()
	if failed.Load() == 0 && c.max.Load() < 2 {
		t.Fatalf("the ten 1 s handlers never overlapped (at most %d at once)", c.max.Load())
	}
}
