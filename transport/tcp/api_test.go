package tcp_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

func echoServer(t *testing.T) *erpc.Server {
	t.Helper()
	srv := erpc.NewServer()
	if err := srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestDialForms: "tcp://host:port" serves and dials; Target says tcp://;
// erpc.Dial opens a client-only tcp endpoint; "tcp://" cannot serve.
func TestDialForms(t *testing.T) {
	ep, err := echoServer(t).Listen("tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if !strings.HasPrefix(ep.Target(), "tcp://127.0.0.1:") {
		t.Fatalf("Target %q, want tcp://127.0.0.1:port", ep.Target())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if resp, err := s.Call(ctx, "Echo", []byte("hi"), nil); err != nil || string(resp) != "hi" {
		t.Fatalf("echo: %q, %v", resp, err)
	}
	// An address without the scheme, from a tcp endpoint: its own transport.
	cli, err := erpc.Listen("tcp://")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if cli.Target() != "" {
		t.Fatalf("a client-only endpoint's Target is %q, want \"\"", cli.Target())
	}
	s2, err := cli.Dial(ctx, strings.TrimPrefix(ep.Target(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if _, err := echoServer(t).Listen("tcp://"); !errors.Is(err, erpc.ErrInvalidArgument) {
		t.Fatalf(`serve on "tcp://": %v, want InvalidArgument`, err)
	}
	if _, err := erpc.Listen("tcp://nonsense"); !errors.Is(err, erpc.ErrInvalidArgument) {
		t.Fatalf(`listen on "tcp://nonsense": %v, want InvalidArgument`, err)
	}
}

// TestLeanPath: sessions over TCP take the engine's lean path
// (transport.Reliable): a handler that holds its server's loop for 40 ms,
// twice a loopback session's 20 ms least timeout, makes no client resend,
// and runs once per call. Without the declaration the client resends
// (checked by hand: Reliable returning false, 1 retransmit in 3 calls).
func TestLeanPath(t *testing.T) {
	var runs atomic.Int32
	srv := erpc.NewServer()
	if err := srv.HandleRaw("Stall", func(r erpc.Request) {
		runs.Add(1)
		time.Sleep(40 * time.Millisecond)
		r.Respond(nil)
	}); err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen("tcp://127.0.0.1:0", erpc.WithHandoff(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	cli, err := erpc.Listen("tcp://")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	s, err := cli.Dial(context.Background(), ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	const calls = 3
	for range calls {
		if _, err := s.Call(context.Background(), "Stall", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if r := cli.Stats().Retransmits; r != 0 {
		t.Errorf("the client resent %d packets over TCP", r)
	}
	if n := runs.Load(); n != calls {
		t.Errorf("handler ran %d times for %d calls", n, calls)
	}
}
