package erpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
)

// The tests of this file each reproduce one way the library once lost
// data or ran a request twice at the edge of a buffer's or a session's
// lifetime (issue 13); each failed on the code before its fix.

// TestEchoHandlerOwnBuffer: the documented echo handler returns its
// request buffer. The endpoint keeps that response for retransmissions
// while later requests arrive, so it must not hand the same memory to the
// next request: every response is the caller's own bytes, at sizes whose
// responses take many packets.
func TestEchoHandlerOwnBuffer(t *testing.T) {
	checkLeaks(t)
	srv := udpNet{}.Listen(t, serverWith(t, "Echo", func(_ context.Context, req []byte) ([]byte, error) {
		return req, nil
	}))
	s := dialT(t, udpNet{}, udpNet{}.Listen(t, nil), srv)
	for _, size := range []int{8 << 10, 200 << 10} {
		var wrong atomic.Int32
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), uint64(size)))
				req := make([]byte, size)
				var resp []byte
				for range 50 {
					for i := range req {
						req[i] = byte(rng.Uint32())
					}
					var err error
					resp, err = s.Call(context.Background(), "Echo", req, resp)
					if err != nil {
						t.Errorf("call: %v", err)
						return
					}
					if !bytes.Equal(resp, req) {
						wrong.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if n := wrong.Load(); n > 0 {
			t.Fatalf("%d of 400 echo calls of %d bytes came back with other bytes", n, size)
		}
	}
}

// TestLateCopiesNeverRunTwice: 200 one-call sessions, one after another on
// one client endpoint (which reuses its session numbers), over a network
// that duplicates datagrams and holds some back by up to 300 ms. Late
// copies of old connects and requests arrive while newer sessions use the
// same numbers: none may run a request again. The TLS variant does it
// with a handshake per session and every packet sealed.
func TestLateCopiesNeverRunTwice(t *testing.T) {
	t.Run("plaintext", func(t *testing.T) { testLateCopiesNeverRunTwice(t) })
	t.Run("tls", func(t *testing.T) { testLateCopiesNeverRunTwice(t, erpc.WithTLS(newTestPKI(t).bothTLS())) })
}

func testLateCopiesNeverRunTwice(t *testing.T, opts ...erpc.Option) {
	checkLeaks(t)
	net := memnet.NewNetwork(7, memnet.LinkConfig{Dup: 0.2, Reorder: 0.3, ReorderDelay: 300 * time.Millisecond,
		Delay: 20 * time.Microsecond})
	n := &memNet{net}
	var mu sync.Mutex
	runs := map[uint64]int{}
	srv := n.Listen(t, serverWith(t, "Tag", func(_ context.Context, req []byte) ([]byte, error) {
		mu.Lock()
		runs[binary.LittleEndian.Uint64(req)]++
		mu.Unlock()
		return req, nil
	}), opts...)
	cli := n.Listen(t, nil, opts...)
	const sessions = 200
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range uint64(sessions) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := cli.Dial(ctx, n.Target(srv))
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			defer s.Close()
			req := binary.LittleEndian.AppendUint64(nil, i)
			if resp, err := s.Call(ctx, "Tag", req, nil); err != nil || !bytes.Equal(resp, req) {
				t.Errorf("call %d: %x, %v", i, resp, err)
			}
		})
	}
	wg.Wait()
	time.Sleep(400 * time.Millisecond) // let the last held-back copies land
	mu.Lock()
	defer mu.Unlock()
	for tag, n := range runs {
		if n > 1 {
			t.Errorf("request %d ran %d times", tag, n)
		}
	}
	if st := net.Stats(); st.Duplicated == 0 || st.Reordered == 0 {
		t.Fatalf("the network neither duplicated nor delayed anything: %+v", st)
	}
}

// TestBackgroundRespondThenPanic: a background handler that answers and
// then panics. The panic is logged; the endpoint must not touch the
// request it already answered (which by then may serve another call), and
// the process lives on.
func TestBackgroundRespondThenPanic(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	h := erpc.NewServer()
	h.HandleRaw("AnswerThenPanic", func(r erpc.Request) {
		r.Respond([]byte("answered"))
		time.Sleep(time.Millisecond) // the loop sends the answer meanwhile
		panic("after the answer")
	}, erpc.Background())
	h.Handle("Echo", echoHandler, erpc.Background())
	srv := n.Listen(t, h, erpc.WithLogger(slog.New(slog.DiscardHandler)))
	s := dialT(t, n, n.Listen(t, nil), srv)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 20 {
				if resp, err := call(t, s, "AnswerThenPanic", nil); err != nil || string(resp) != "answered" {
					t.Errorf("answered call: %q %v", resp, err)
				}
				req := []byte{byte(g), byte(i)}
				if resp, err := call(t, s, "Echo", req); err != nil || !bytes.Equal(resp, req) {
					t.Errorf("echo beside the panics: %q %v", resp, err)
				}
			}
		})
	}
	wg.Wait()
}

// TestHandlerContextEndsWithRequest: a handler's context is canceled when
// its request ends (a goroutine waiting on it does not leak), and it is
// never reused: a later request's cancellation does not show in it.
func TestHandlerContextEndsWithRequest(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	ctxs := make(chan context.Context, 2)
	h := erpc.NewServer()
	h.Handle("Keep", func(ctx context.Context, req []byte) ([]byte, error) {
		ctxs <- ctx
		return req, nil
	})
	h.Handle("Wait", func(ctx context.Context, req []byte) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, erpc.Background())
	srv := n.Listen(t, h)
	s := dialT(t, n, n.Listen(t, nil), srv)
	if _, err := call(t, s, "Keep", []byte("a")); err != nil {
		t.Fatal(err)
	}
	kept := <-ctxs
	select {
	case <-kept.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a handler's context is still live 5 s after its request ended")
	}
	if !errors.Is(kept.Err(), context.Canceled) {
		t.Fatalf("ended request's context: Err %v", kept.Err())
	}
	// Many more requests, some canceled by their callers: the kept
	// context must not change, nor be handed out again.
	for range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		s.Call(ctx, "Wait", nil, nil)
		cancel()
		if _, err := call(t, s, "Keep", []byte("b")); err != nil {
			t.Fatal(err)
		}
		if again := <-ctxs; again == kept {
			t.Fatal("a context was handed to a second request")
		}
	}
}

// TestCanceledCallBufferNotRead: a call whose context ends returns at
// once, and from then on the caller owns its request buffer again: the
// endpoint must not send bytes from it afterwards. Run under -race: the
// detector sees a send that reads the buffer after Call returned. Without
// it, the server checks that every request it gets is intact.
func TestCanceledCallBufferNotRead(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	var torn atomic.Int32
	srv := n.Listen(t, serverWith(t, "Check", func(_ context.Context, req []byte) ([]byte, error) {
		for _, b := range req {
			if b != req[0] {
				torn.Add(1)
				break
			}
		}
		return nil, nil
	}))
	s := dialT(t, n, n.Listen(t, nil), srv)
	req := make([]byte, 256<<10) // many packets: some are queued when the call ends
	for i := range 200 {
		for j := range req {
			req[j] = byte(i)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%20)*10*time.Microsecond)
		s.Call(ctx, "Check", req, nil)
		cancel()
		for j := range req { // the caller's buffer again
			req[j] = 0xFF
		}
	}
	if _, err := call(t, s, "Check", []byte{7, 7}); err != nil {
		t.Fatal(err)
	}
	if n := torn.Load(); n > 0 {
		t.Fatalf("the server got %d requests with bytes the caller wrote after its call returned", n)
	}
}
