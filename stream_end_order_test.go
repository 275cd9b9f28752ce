package erpc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestStreamEndsContextFirst: when a client's session ends under a
// server stream, the handler's context is done by the time its blocked
// Recv returns, so a handler that checks its context on an error sees
// why (cmd/erpc's test server once saw Recv fail with Unavailable while
// its context was still live). Each round dials, opens a stream, waits
// for the handler to start, and closes the session.
func TestStreamEndsContextFirst(t *testing.T) {
	started := make(chan struct{}, 1)
	var rounds, live, recvOK atomic.Int64
	srv := streamServer(t, "Park", func(s erpc.ServerStream) error {
		started <- struct{}{}
		for {
			if _, err := s.Recv(); err != nil {
				rounds.Add(1)
				if s.Context().Err() == nil {
					live.Add(1)
				}
				return err
			}
			recvOK.Add(1)
		}
	})
	n := newMemNet()
	sep := n.Listen(t, srv)
	cli := n.Listen(t, nil)
	const want = 150
	for i := range want {
		s := dialT(t, n, cli, sep)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := s.NewStream(ctx, "Park")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send([]byte("x")); err != nil { // the handler starts on the first message
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatalf("round %d: the handler did not start", i)
		}
		s.Close()
		cancel()
	}
	waitFor(t, "every handler to see its stream end", func() bool { return rounds.Load() == want })
	if l := live.Load(); l != 0 {
		t.Fatalf("%d of %d handlers saw Recv fail while their context was live", l, want)
	}
	t.Logf("%d handlers received the first message before the end", recvOK.Load())
}
