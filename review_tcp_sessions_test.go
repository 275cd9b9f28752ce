package erpc_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewTCPServerSessionsFreed: no session leaks: clients over TCP
// (listening and client-only ones, closed with their sessions open or
// closed first, calls pending or not) go, and the server's sessions
// go with them, at once (their connections close: PeerGone).
func TestReviewTCPServerSessionsFreed(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	srv := reviewEchoServer(t)
	if err := srv.Handle("Hang", func(ctx context.Context, _ []byte) ([]byte, error) {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	sep, err := srv.Listen("tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sep.Close()
	rng := rand.New(rand.NewPCG(31, 41))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 12 {
		addr := "tcp://"
		if i%2 == 0 {
			addr = "tcp://127.0.0.1:0"
		}
		cep, err := erpc.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + rng.IntN(3) {
			s, err := cep.Dial(ctx, sep.Target())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Call(ctx, "Echo", []byte("x"), nil); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(2) == 0 {
				s.Go("Hang", nil, nil, func([]byte, error) {})
			}
			if rng.IntN(3) == 0 {
				s.Close()
			}
		}
		cep.Close()
	}
	var st erpc.Stats
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if st = sep.Stats(); st.ServerSessions == 0 && st.HalfOpen == 0 {
			return
		}
	}
	t.Fatalf("3 s after every client closed, the server holds %d sessions (%d half-open)", st.ServerSessions, st.HalfOpen)
}
