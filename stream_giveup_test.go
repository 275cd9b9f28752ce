package erpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestStreamClientGiveUpReachesHandler: a burst of held requests
// fills a server (WithMaxHeldRequests) long enough that a stream's
// exchange is refused again and again; the client gives up (the
// stream fails with ResourceExhausted, and the session lives on). Once
// the burst is over, the handler must learn that its client gave up:
// its context ends, and with it its Recv. It waited for good, with the
// two exchanges the client had parked held by the server for the
// session's life: the client forgets a failed stream without telling
// the server.
func TestStreamClientGiveUpReachesHandler(t *testing.T) {
	checkLeaks(t)
	handlerDone := make(chan error, 1)
	release := make(chan struct{})
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Wait", func(s erpc.ServerStream) error {
		_, err := s.Recv()
		<-s.Context().Done()
		handlerDone <- err
		return err
	}))
	must(t, srv.Handle("Slow", func(context.Context, []byte) ([]byte, error) {
		<-release
		return nil, nil
	}, erpc.Background()))
	n := newMemNet()
	sep := n.Listen(t, srv, erpc.WithMaxHeldRequests(1)) // parked exchanges do not count against it
	cli := n.Listen(t, nil)
	sess := dialT(t, n, cli, sep)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang fails, not waits for good
	defer cancel()
	st, err := sess.NewStream(ctx, "Wait")
	if err != nil {
		t.Fatal(err)
	}
	// The client parks two exchanges (two held requests, off the
	// limit); the burst is one more, which fills the server.
	waitFor(t, "two parked exchanges", func() bool { return sep.Stats().HeldRequests == 2 })
	slow := make(chan error, 1)
	sess.Go("Slow", nil, nil, func(_ []byte, err error) { slow <- err })
	waitFor(t, "the server full", func() bool { return sep.Stats().HeldRequests == 3 })
	if err := st.Send([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv() // the exchange carrying "x" is refused until the client gives up
	if erpc.CodeOf(err) != erpc.ResourceExhausted {
		close(release)
		t.Fatalf("Recv = %v, want ResourceExhausted (the server refusing the stream's exchange)", err)
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatalf("Slow: %v", err)
	}
	select {
	case err := <-handlerDone:
		t.Logf("the handler's Recv: %v", err)
	case <-time.After(10 * time.Second): // a hang, not a measure
		t.Fatal("the handler still waits 10 s after its client gave up on the stream")
	}
}
