// Package rpctest is the RPC-level conformance suite every erpc-go transport
// passes: echo of random sizes up to 8 MiB, many sessions, concurrent calls,
// idle sessions, and close semantics, through the public API.
package rpctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// Net makes endpoints that reach each other over one kind of transport.
type Net interface {
	// Listen opens an endpoint serving srv, or only making calls if srv
	// is nil; the test closes it.
	Listen(t *testing.T, srv *erpc.Server, opts ...erpc.Option) *erpc.Endpoint
	// Target is the address to dial ep at.
	Target(ep *erpc.Endpoint) string
}

// RunRPC runs the RPC-level conformance suite over n: echo of random sizes
// up to 8 MiB, many sessions, concurrent calls, idle sessions, and close
// semantics.
func RunRPC(t *testing.T, n Net) {
	t.Run("EchoSizes", func(t *testing.T) { testEchoSizes(t, n) })
	t.Run("ManySessions", func(t *testing.T) { testManySessions(t, n) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, n) })
	t.Run("IdleSessions", func(t *testing.T) { testIdle(t, n) })
	t.Run("CloseServer", func(t *testing.T) { testCloseServer(t, n) })
	t.Run("CloseClient", func(t *testing.T) { testCloseClient(t, n) })
}

// echoServer serves "Echo" (inline, answering with the request's own
// buffer, as the documentation's echo does) and "Slow" (background, waits
// for its context or 10 s).
func echoServer(t *testing.T, n Net, opts ...erpc.Option) *erpc.Endpoint {
	srv := erpc.NewServer()
	if err := srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) {
		return req, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Handle("Slow", func(ctx context.Context, req []byte) ([]byte, error) {
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
		return req, nil
	}, erpc.Background()); err != nil {
		t.Fatal(err)
	}
	return n.Listen(t, srv, opts...)
}

func dial(t *testing.T, n Net, cli, srv *erpc.Endpoint) *erpc.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cli.Dial(ctx, n.Target(srv))
	if err != nil {
		t.Fatalf("dial %s: %v", n.Target(srv), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func echo(t *testing.T, s *erpc.Session, req []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := s.Call(ctx, "Echo", req, nil)
	if err != nil {
		t.Fatalf("echo of %d bytes: %v", len(req), err)
	}
	if !bytes.Equal(resp, req) {
		t.Fatalf("echo of %d bytes came back different (%d bytes)", len(req), len(resp))
	}
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func testEchoSizes(t *testing.T, n Net) {
	srv := echoServer(t, n)
	s := dial(t, n, n.Listen(t, nil), srv)
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 32, 1400, 1500, 4096, 65536, 1 << 20, 8 << 20}
	for range 12 {
		sizes = append(sizes, r.IntN(8<<20))
	}
	for _, size := range sizes {
		echo(t, s, randomBytes(r, size))
	}
}

func testManySessions(t *testing.T, n Net) {
	srv := echoServer(t, n)
	cli := n.Listen(t, nil)
	const sessions = 50
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		s := dial(t, n, cli, srv)
		wg.Go(func() {
			for j := range 10 {
				req := fmt.Appendf(nil, "session %d call %d", i, j)
				resp, err := s.Call(context.Background(), "Echo", req, nil)
				if err != nil || !bytes.Equal(resp, req) {
					errs <- fmt.Errorf("session %d call %d: %q, %v", i, j, resp, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func testConcurrency(t *testing.T, n Net) {
	srv := echoServer(t, n)
	s := dial(t, n, n.Listen(t, nil), srv)
	const goroutines, calls = 32, 40
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			var resp []byte
			for range calls {
				req := randomBytes(r, r.IntN(5000))
				var err error
				resp, err = s.Call(context.Background(), "Echo", req, resp)
				if err != nil || !bytes.Equal(resp, req) {
					errs <- fmt.Errorf("goroutine %d: %v", g, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func testIdle(t *testing.T, n Net) {
	opts := []erpc.Option{erpc.WithKeepalive(20*time.Millisecond, 300*time.Millisecond)}
	srv := echoServer(t, n, opts...)
	cli := n.Listen(t, nil, opts...)
	var ss []*erpc.Session
	for range 5 {
		ss = append(ss, dial(t, n, cli, srv))
	}
	time.Sleep(900 * time.Millisecond) // three idle timeouts: only keepalives keep them
	for _, s := range ss {
		echo(t, s, []byte("still there"))
	}
	if st := srv.Stats(); st.ServerSessions != len(ss) {
		t.Fatalf("server holds %d sessions, want %d", st.ServerSessions, len(ss))
	}
	if st := srv.Stats(); st.ResetsSent != 0 {
		t.Fatalf("the server forgot idle sessions (%d resets)", st.ResetsSent)
	}
}

func testCloseServer(t *testing.T, n Net) {
	srv := echoServer(t, n)
	cli := n.Listen(t, nil, erpc.WithFailureTimeout(300*time.Millisecond))
	s := dial(t, n, cli, srv)
	echo(t, s, []byte("before"))
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "Slow", []byte("x"), nil)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	srv.Close()
	select {
	case err := <-done:
		if !errors.Is(err, erpc.ErrUnavailable) {
			t.Fatalf("call pending when the server closed: %v, want Unavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call still pending 5 s after the server closed (failure timeout 300 ms)")
	}
	t.Logf("pending call failed %v after the server closed", time.Since(start))
}

func testCloseClient(t *testing.T, n Net) {
	srv := echoServer(t, n)
	cli := n.Listen(t, nil)
	s := dial(t, n, cli, srv)
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "Slow", []byte("x"), nil)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	s.Close()
	if err := <-done; !errors.Is(err, erpc.ErrUnavailable) {
		t.Fatalf("call pending when its session closed: %v", err)
	}
	if _, err := s.Call(context.Background(), "Echo", nil, nil); !errors.Is(err, erpc.ErrUnavailable) {
		t.Fatalf("call on a closed session: %v", err)
	}
	// The endpoint still serves other sessions.
	echo(t, dial(t, n, cli, srv), []byte("other session"))
	cli.Close()
	if _, err := cli.Dial(context.Background(), n.Target(srv)); !errors.Is(err, erpc.ErrUnavailable) {
		t.Fatalf("dial from a closed endpoint: %v", err)
	}
}
