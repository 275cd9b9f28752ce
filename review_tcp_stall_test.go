package erpc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewTCPPeerStopsReading: promise 3: a server whose loop stops
// (it stops reading its connection, which stays open: TCP keeps
// acknowledging into the kernel's buffer) fails a call made to it by the
// failure timeout (2 s by default), with Unavailable, not NotExecuted
// (the request went), instead of hanging to the caller's deadline.
func TestReviewTCPPeerStopsReading(t *testing.T) {
	sep, err := reviewEchoServer(t).Listen("tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, sep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Call(ctx, "Echo", []byte("warm"), nil); err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	defer close(block)
	if err := sep.Post(func() { <-block }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	start := time.Now()
	_, err = s.Call(ctx, "Echo", []byte("into the void"), nil)
	took := time.Since(start)
	if err == nil || !errors.Is(err, erpc.ErrUnavailable) || took > 10*time.Second {
		t.Fatalf("a call to a server that stopped reading: %v after %v; want Unavailable by the failure timeout", err, took)
	}
	if errors.Is(err, erpc.ErrNotExecuted) {
		t.Fatalf("NotExecuted for a request the server may run when it wakes: %v", err)
	}
	t.Logf("failed after %v: %v", took, err)
}
