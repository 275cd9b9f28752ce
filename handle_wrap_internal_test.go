package erpc

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport/memnet"
)

// TestKeptHandleGenerationWraps: a Request handle tells its request from
// later ones by a 32-bit generation that each recycling of the pooled
// request bumps. The Request doc promises a kept handle is spent forever
// once answered ("even though the endpoint reuses the memory behind it
// for later requests"), with no bound on how long it is kept. An inline
// server that serves one call at a time reuses the same pooled request for
// every call (the loop's free list is LIFO), so after 2^32 calls (about an
// hour at a million calls a second) a handle kept since the first is live
// again: it reads a stranger's request and its Respond answers it. The
// test stands in for the 2^32-2 calls in between by setting the pooled
// request's generation to where they would have left it.
func TestKeptHandleGenerationWraps(t *testing.T) {
	net := memnet.NewNetwork(1, memnet.LinkConfig{})
	str, _ := net.Listen("server")
	ctr, _ := net.Listen("client")
	var kept Request
	var first = true
	srv := NewServer()
	srv.HandleRaw("Echo", func(r Request) {
		if first {
			kept, first = r, false
		}
		if bytes.HasPrefix(r.Data(), []byte("third")) { // its handler answers a little later
			go func() { time.Sleep(50 * time.Millisecond); r.Respond(r.Data()) }()
			return
		}
		r.Respond(r.Data())
	})
	sep, err := srv.Listen("", WithTransport(str))
	if err != nil {
		t.Fatal(err)
	}
	defer sep.Close()
	cep, err := Listen("", WithTransport(ctr))
	if err != nil {
		t.Fatal(err)
	}
	defer cep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cep.Dial(ctx, sep.Target())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(ctx, "Echo", []byte("first"), nil); err != nil {
		t.Fatal(err)
	}
	if kept.Respond(nil) == nil || kept.Data() != nil {
		t.Fatal("the kept handle is not spent after its answer")
	}
	// 2^32-2 more calls, each recycling the pooled request once.
	done := make(chan struct{})
	sep.Post(func() {
		r := kept.r
		r.state.Store(uint64(kept.gen-1) << 32)
		close(done)
	})
	<-done
	if _, err := s.Call(ctx, "Echo", []byte("second"), nil); err != nil { // generation kept.gen-1
		t.Fatal(err)
	}
	// The next call's request has the kept handle's generation.
	got := make(chan string, 1)
	saw := make(chan []byte, 1)
	go func() {
		for kept.Data() == nil {
			time.Sleep(10 * time.Microsecond)
		}
		saw <- bytes.Clone(kept.Data())
		if kept.Respond([]byte("from a handle spent 2^32 calls ago")) == nil {
			got <- "the kept handle answered a later call"
		}
	}()
	resp, err := s.Call(ctx, "Echo", []byte("third: a stranger's call"), nil)
	select {
	case d := <-saw:
		t.Errorf("a handle spent 2^32 calls ago reads a later call's Data %q", d)
	case <-time.After(100 * time.Millisecond):
	}
	select {
	case m := <-got:
		t.Errorf("%s: the client got %q (err %v)", m, resp, err)
	default:
	}
}
