package erpc

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport/memnet"
)

// directPair is a client endpoint with a session to an echo server over an
// in-memory network, and, on the client endpoint, a server of its own
// (fwd) whose handlers call the echo server.
type directPair struct {
	net  *memnet.Network
	cep  *Endpoint
	sess *Session
	// callerSess: a third endpoint's session to cep's server (caller).
	callerSess *Session
}

func newDirectPair(t *testing.T, fwd *Server, opts ...Option) *directPair {
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
	cep, err := fwd.Listen("", append([]Option{WithTransport(ctr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cep.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cep.Dial(ctx, sep.Target())
	if err != nil {
		t.Fatal(err)
	}
	return &directPair{net: net, cep: cep, sess: s}
}

// onLoopValue reads a loop-owned value on the loop.
func onLoopValue[T any](t *testing.T, ep *Endpoint, read func() T) T {
	t.Helper()
	var v T
	done := make(chan struct{})
	if err := ep.Post(func() { v = read(); close(done) }); err != nil {
		t.Fatal(err)
	}
	<-done
	return v
}

// TestGoOnLoopSkipsQueue: a call that a continuation, a Post function or
// an inline handler starts with Session.Go goes straight into the engine:
// right after Go returns, the command queue is still empty, and the loop
// counts the call as started directly. A call from another goroutine
// still takes the queue.
func TestGoOnLoopSkipsQueue(t *testing.T) {
	var p *directPair
	var mu sync.Mutex
	var queued []string // which on-loop Go left a command in the queue
	note := func(where string) {
		if n := p.cep.cmds.n.Load(); n != 0 {
			mu.Lock()
			queued = append(queued, fmt.Sprintf("%s: %d queued", where, n))
			mu.Unlock()
		}
	}
	fwd := NewServer()
	fwd.HandleRaw("Fwd", func(r Request) {
		p.sess.Go("Echo", r.Data(), nil, func(resp []byte, err error) {
			if err != nil {
				r.RespondError(err)
				return
			}
			r.Respond(resp)
		})
		note("inline handler")
	})
	p = newDirectPair(t, fwd)
	before := onLoopValue(t, p.cep, func() int { return p.cep.loop.directCalls })

	// A chain of continuations, each starting the next call.
	const chain = 200
	done := make(chan error, 1)
	var next func(i int) func([]byte, error)
	next = func(i int) func([]byte, error) {
		return func(resp []byte, err error) {
			if err == nil && !bytes.Equal(resp, []byte{byte(i)}) {
				err = fmt.Errorf("call %d answered %v", i, resp)
			}
			if err != nil || i == chain {
				done <- err
				return
			}
			p.sess.Go("Echo", []byte{byte(i + 1)}, nil, next(i+1))
			note("continuation")
		}
	}
	p.sess.Go("Echo", []byte{0}, nil, next(0)) // off the loop: through the queue
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// From a Post function.
	if err := p.cep.Post(func() {
		p.sess.Go("Echo", []byte{1}, nil, func(_ []byte, err error) { done <- err })
		note("Post function")
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// From an inline handler: another endpoint calls Fwd.
	for range 3 {
		if resp, err := p.callFwd(t, []byte("x")); err != nil || string(resp) != "x" {
			t.Fatalf("Fwd: %q, %v", resp, err)
		}
	}
	after := onLoopValue(t, p.cep, func() int { return p.cep.loop.directCalls })
	mu.Lock()
	defer mu.Unlock()
	if len(queued) > 0 {
		t.Fatalf("calls started on the loop went through the command queue: %v", queued[:min(len(queued), 5)])
	}
	if got, want := after-before, chain+4; got != want {
		t.Fatalf("%d calls started directly, want %d (the chain's %d, the Post function's and the three handlers')", got, want, chain)
	}
}

// caller returns a session from a third endpoint to the forwarding server
// (made on first use, by one goroutine).
func (p *directPair) caller(t *testing.T) *Session {
	t.Helper()
	if p.callerSess != nil {
		return p.callerSess
	}
	tr, err := p.net.Listen(fmt.Sprintf("caller%d", rand.Uint64()))
	if err != nil {
		t.Fatal(err)
	}
	ep, err := Listen("", WithTransport(tr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if p.callerSess, err = ep.Dial(ctx, p.cep.Target()); err != nil {
		t.Fatal(err)
	}
	return p.callerSess
}

func (p *directPair) callFwd(t *testing.T, req []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.caller(t).Call(ctx, "Fwd", req, nil)
}

// TestGoOnLoopAcrossHandoff attacks the pin that keeps a direct start safe:
// inline handlers start a call, run for a random time (so that some are
// handed off mid-handler, and then start their second call from a
// goroutine that no longer holds the loop), and answer from the second
// continuation; meanwhile goroutines off the loop start calls on the same
// session and a continuation chain starts one per answer. Every call must
// get its own answer (run it under -race: a call started off the loop
// straight into the engine is a data race), handoffs must have happened,
// and calls must have started both directly and through the queue.
func TestGoOnLoopAcrossHandoff(t *testing.T) {
	var p *directPair
	rng := rand.New(rand.NewPCG(33, 2))
	var rngMu sync.Mutex
	pause := func() time.Duration {
		rngMu.Lock()
		defer rngMu.Unlock()
		if rng.IntN(3) == 0 {
			return 0
		}
		return time.Duration(rng.IntN(400)) * time.Microsecond
	}
	fwd := NewServer()
	fwd.HandleRaw("Fwd", func(r Request) {
		var left atomic.Int32
		left.Store(2)
		var failed atomic.Value
		req := append([]byte(nil), r.Data()...)
		answer := func(resp []byte, err error) {
			if err == nil && !bytes.Equal(resp, req) {
				err = fmt.Errorf("answered %q to %q", resp, req)
			}
			if err != nil {
				failed.Store(err)
			}
			if left.Add(-1) == 0 {
				if e, _ := failed.Load().(error); e != nil {
					r.RespondError(e)
					return
				}
				r.Respond(req)
			}
		}
		p.sess.Go("Echo", req, nil, answer)
		time.Sleep(pause())
		p.sess.Go("Echo", req, nil, answer)
	})
	p = newDirectPair(t, fwd, WithHandoff(50*time.Microsecond))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 4 { // off the loop
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				want := []byte(fmt.Sprintf("g%d-%d", g, i))
				got := make(chan error, 1)
				p.sess.Go("Echo", want, nil, func(resp []byte, err error) {
					if err == nil && !bytes.Equal(resp, want) {
						err = fmt.Errorf("answered %q to %q", resp, want)
					}
					got <- err
				})
				if err := <-got; err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var chained atomic.Int64
	var chain func(resp []byte, err error)
	chain = func(resp []byte, err error) {
		if err == nil && string(resp) != "chain" {
			err = fmt.Errorf("chain answered %q", resp)
		}
		if err != nil {
			errs <- err
			return
		}
		select {
		case <-stop:
			return
		default:
		}
		chained.Add(1)
		p.sess.Go("Echo", []byte("chain"), nil, chain)
	}
	p.sess.Go("Echo", []byte("chain"), nil, chain)
	p.caller(t) // made before the goroutines that share it
	var fwdWG sync.WaitGroup
	for c := range 4 { // inline handlers, some handed off
		fwdWG.Add(1)
		go func() {
			defer fwdWG.Done()
			for i := range 50 {
				req := []byte(fmt.Sprintf("f%d-%d", c, i))
				if resp, err := p.callFwd(t, req); err != nil || !bytes.Equal(resp, req) {
					errs <- fmt.Errorf("Fwd %q: %q, %v", req, resp, err)
					return
				}
			}
		}()
	}
	fwdWG.Wait()
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	direct := onLoopValue(t, p.cep, func() int { return p.cep.loop.directCalls })
	handoffs := p.cep.watch.handoffs.Load()
	t.Logf("%d handoffs, %d calls started directly, %d chained", handoffs, direct, chained.Load())
	if handoffs == 0 || direct == 0 || chained.Load() == 0 {
		t.Fatalf("the test exercised too little: %d handoffs, %d direct starts, %d chained calls", handoffs, direct, chained.Load())
	}
}

// TestGoOnLoopNeverReenters: a call started on the loop that cannot start
// at once (here: its session is closed) is settled later, through the
// queue, never inside the Go that started it, so a continuation that
// reissues on failure cannot recurse without bound; and the direct path
// counts no such call.
func TestGoOnLoopNeverReenters(t *testing.T) {
	p := newDirectPair(t, NewServer())
	before := onLoopValue(t, p.cep, func() int { return p.cep.loop.directCalls })
	p.sess.Close()
	type result struct {
		inside bool
		err    error
	}
	got := make(chan result, 1)
	if err := p.cep.Post(func() {
		returned := false
		p.sess.Go("Echo", []byte("x"), nil, func(_ []byte, err error) {
			got <- result{inside: !returned, err: err}
		})
		returned = true
	}); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.inside {
		t.Fatal("the continuation ran inside the Go that started its call")
	}
	if r.err == nil || !NotExecuted(r.err) {
		t.Fatalf("a call on a closed session: %v, want a never-ran failure", r.err)
	}
	if after := onLoopValue(t, p.cep, func() int { return p.cep.loop.directCalls }); after != before {
		t.Fatalf("%d calls on a closed session counted as started directly", after-before)
	}
}
