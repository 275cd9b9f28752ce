package erpc

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport/memnet"
)

// TestKeptHandleGenerationWraps: a Request handle tells its request from
// later ones by a generation that each recycling of the pooled request
// bumps. The Request doc promises a kept handle is spent for good once
// answered ("even though the endpoint reuses the memory behind it for
// later requests"), with no bound on how long it is kept. An inline
// server that serves one call at a time reuses the same pooled request for
// every call (the loop's free list is LIFO), so with a 32-bit generation a
// handle kept since the first call was live again after 2^32 calls (about
// an hour at a million calls a second): it read a stranger's request and
// its Respond answered it. The test stands in for the calls in between by
// setting the pooled request's generation to where they would have left
// it: 2^32 recycles on (the old wrap point: the generation is 48 bits
// now), and the last generation of 48 bits (the request is retired after
// it, so the generation never wraps back to the kept handle's).
func TestKeptHandleGenerationWraps(t *testing.T) {
	for _, c := range []struct {
		name    string
		gen     func(kept uint64) uint64 // what the pooled request's generation is set to
		between int                      // calls served before the one the kept handle must not reach
		retired bool                     // the pooled request is retired by then
	}{
		{"2^32 recycles", func(kept uint64) uint64 { return kept + 1<<32 - 1 }, 1, false},
		{"48-bit wrap", func(uint64) uint64 { return genLast - 1 }, 2, true},
	} {
		t.Run(c.name, func(t *testing.T) { testKeptHandleGenerationWraps(t, c.gen, c.between, c.retired) })
	}
}

func testKeptHandleGenerationWraps(t *testing.T, setGen func(uint64) uint64, between int, retired bool) {
	net := memnet.NewNetwork(1, memnet.LinkConfig{})
	str, _ := net.Listen("server")
	ctr, _ := net.Listen("client")
	var kept Request
	var first = true
	var last atomic.Pointer[request] // the pooled request of the last call served
	var lastGen atomic.Uint64        // and its generation
	srv := NewServer()
	srv.HandleRaw("Echo", func(r Request) {
		if first {
			kept, first = r, false
		}
		last.Store(r.r)
		lastGen.Store(r.gen)
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
	// The calls in between, each recycling the pooled request once.
	done := make(chan struct{})
	sep.Post(func() {
		kept.r.state.Store(setGen(kept.gen) << genShift)
		close(done)
	})
	<-done
	for range between {
		if _, err := s.Call(ctx, "Echo", []byte("second"), nil); err != nil {
			t.Fatal(err)
		}
	}
	// The next call's request would have the kept handle's generation, in
	// its memory, if the generation wrapped (or were 32 bits).
	got := make(chan string, 1)
	saw := make(chan []byte, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for kept.Data() == nil {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Microsecond):
			}
		}
		saw <- bytes.Clone(kept.Data())
		if kept.Respond([]byte("from a handle spent long ago")) == nil {
			got <- "the kept handle answered a later call"
		}
	}()
	resp, err := s.Call(ctx, "Echo", []byte("third: a stranger's call"), nil)
	select {
	case d := <-saw:
		t.Errorf("a handle spent long ago reads a later call's Data %q", d)
	case <-time.After(100 * time.Millisecond):
	}
	select {
	case m := <-got:
		t.Errorf("%s: the client got %q (err %v)", m, resp, err)
	default:
	}
	// The attack reached what it meant to: the same memory reused at the
	// generation 2^32 on, or that memory retired at the last generation.
	third := last.Load()
	switch st := kept.r.state.Load(); {
	case !retired && third != kept.r:
		t.Errorf("the third call was not served in the kept handle's memory")
	case !retired && lastGen.Load() != kept.gen+1<<32:
		t.Errorf("the third call's generation is %#x, want %#x", lastGen.Load(), kept.gen+1<<32)
	case retired && (third == kept.r || st != genLast<<genShift):
		t.Errorf("the kept handle's memory was not retired at the last generation: state %#x, reused %v", st, third == kept.r)
	}
}
