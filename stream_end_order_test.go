package erpc_test

import (
	"context"
	"fmt"
	"strings"
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
		if err := st.Send([]byte("x")); err != nil { // a message in flight at the end, sometimes
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

// TestStreamSizeErrorsNameMethodAndTarget: a stream message over the
// limit fails Send with InvalidArgument naming its size, the limit and
// the stream's method (and, on the client, the target).
func TestStreamSizeErrorsNameMethodAndTarget(t *testing.T) {
	srvErr := make(chan error, 1)
	srv := streamServer(t, "Big", func(s erpc.ServerStream) error {
		srvErr <- s.Send(make([]byte, 3000))
		return nil
	})
	sep := listenT(t, srv, "127.0.0.1:0", erpc.WithMaxMessageSize(2000))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, sep.Target(), erpc.WithMaxMessageSize(2000))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.NewStream(ctx, "Big")
	if err != nil {
		t.Fatal(err)
	}
	err = st.Send(make([]byte, 2500))
	if msg := fmt.Sprint(err); erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(msg, "2500") ||
		!strings.Contains(msg, `"Big"`) || !strings.Contains(msg, sep.Target()) || !strings.Contains(msg, "WithMaxMessageSize") {
		t.Errorf("client Send of 2500 bytes over 2000: %v (code %v), want InvalidArgument naming the size, \"Big\", %s and the option", err, erpc.CodeOf(err), sep.Target())
	}
	select { // the handler runs on the stream's opening
	case err := <-srvErr:
		if msg := fmt.Sprint(err); erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(msg, "3000") || !strings.Contains(msg, `"Big"`) {
			t.Errorf("server Send of 3000 bytes over 2000: %v (code %v), want InvalidArgument naming the size and \"Big\"", err, erpc.CodeOf(err))
		}
	case <-ctx.Done():
		t.Fatal("the handler did not run")
	}
}
