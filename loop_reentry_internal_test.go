package erpc

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport/memnet"
)

// TestGoAfterStopNeverReenters: PROMISES "A continuation never runs
// inside the Session.Go that started its call", after the endpoint has
// closed: Go from an ordinary goroutine, whose command finds the queue
// closed. The Go's goroutine is blocked in Go or waiting on the channel,
// so a continuation that runs on it runs inside Go.
func TestGoAfterStopNeverReenters(t *testing.T) {
	p := newDirectPair(t, NewServer())
	p.cep.Close()
	caller := goroutineID()
	inside := make(chan bool, 1)
	var errSeen atomic.Value
	p.sess.Go("Echo", []byte("x"), nil, func(_ []byte, err error) {
		errSeen.Store(err)
		inside <- goroutineID() == caller
	})
	select {
	case in := <-inside:
		if in {
			t.Fatal("the continuation ran inside the Go that started its call (endpoint closed)")
		}
		if CodeOf(errSeen.Load().(error)) != Unavailable {
			t.Fatalf("continuation's error %v, want Unavailable", errSeen.Load())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("continuation never ran")
	}
}

// TestRetryingContinuationAtStopDoesNotNest: a continuation that reissues
// its call when it fails (at most 10000 times), with the call pending
// when the endpoint closes (the test stops at the first nesting: a stack
// trace read on a deep stack is slow). No continuation may run on the goroutine of
// the Go that started its call while that Go runs: that nests one Go inside another, as
// deep as the retries go.
func TestRetryingContinuationAtStopDoesNotNest(t *testing.T) {
	p := newDirectPair(t, NewServer())
	p.net.SetDefault(memnet.LinkConfig{Down: true}) // calls stay pending
	var nested, tries atomic.Int64
	var issue func()
	done := make(chan struct{})
	var finish sync.Once
	issue = func() {
		if tries.Add(1) > 10000 || nested.Load() > 0 { // the first nesting is enough
			finish.Do(func() { close(done) })
			return
		}
		caller := goroutineID()
		var inGo atomic.Bool
		inGo.Store(true)
		p.sess.Go("Echo", []byte("x"), nil, func(_ []byte, err error) {
			if inGo.Load() && goroutineID() == caller {
				nested.Add(1)
			}
			if err != nil {
				issue()
			}
		})
		inGo.Store(false)
	}
	if err := p.cep.Post(issue); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	p.cep.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("only %d tries in 10 s", tries.Load())
	}
	t.Logf("tries %d, continuations run inside the Go that started them: %d", tries.Load(), nested.Load())
	if nested.Load() > 0 {
		t.Fatalf("%d continuations ran nested inside the Go calls that started them", nested.Load())
	}
}
