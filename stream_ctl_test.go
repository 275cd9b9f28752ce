package erpc_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestStreamCreditsPerStream: a stream whose client never reads blocks
// its handler's Send once the client's window (16 messages) is used,
// while a second stream on the same session carries 3000 messages; the
// first handler has sent exactly the window, no more, and its client's
// cancel ends it.
func TestStreamCreditsPerStream(t *testing.T) {
	checkLeaks(t)
	var sentSlow atomic.Int64
	slowDone := make(chan error, 1)
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Slow", func(s erpc.ServerStream) error {
		msg := make([]byte, 100)
		for {
			if err := s.Send(msg); err != nil {
				slowDone <- err
				return err
			}
			sentSlow.Add(1)
		}
	}))
	must(t, srv.HandleStream("Fast", func(s erpc.ServerStream) error {
		for i := range uint64(3000) {
			if err := s.Send(seqMsg(i, 32)); err != nil {
				return err
			}
		}
		return nil
	}))
	_, sess := streamPair(t, newMemNet(), srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	slowCtx, slowCancel := context.WithCancel(ctx)
	defer slowCancel()
	const window = 16
	if _, err := sess.NewStream(slowCtx, "Slow", erpc.StreamWindow(window, 1<<20)); err != nil {
		t.Fatal(err)
	}
	for sentSlow.Load() < window { // the handler fills the window
		time.Sleep(time.Millisecond)
	}
	fast, err := sess.NewStream(ctx, "Fast")
	must(t, err)
	for i := range uint64(3000) {
		if m, err := fast.Recv(); err != nil || string(m) != string(seqMsg(i, 32)) {
			t.Fatalf("fast stream, message %d: %v", i, err)
		}
	}
	if _, err := fast.Recv(); err != io.EOF {
		t.Fatalf("fast stream's end: %v", err)
	}
	if n := sentSlow.Load(); n != window {
		t.Fatalf("the slow stream's handler sent %d messages into a window of %d", n, window)
	}
	slowCancel()
	if err := <-slowDone; erpc.CodeOf(err) != erpc.Canceled {
		t.Fatalf("the blocked Send ended with %v, want Canceled", err)
	}
}

// TestStreamCancelReachesHandler: a client's cancel ends the handler's
// context, carried by one exchange: the client sent at most a couple of
// packets between its cancel and the handler's seeing it.
func TestStreamCancelReachesHandler(t *testing.T) {
	checkLeaks(t)
	inRecv := make(chan struct{})
	seen := make(chan error, 1)
	srv := streamServer(t, "Wait", func(s erpc.ServerStream) error {
		close(inRecv)
		_, err := s.Recv()
		<-s.Context().Done()
		seen <- context.Cause(s.Context())
		return err
	})
	_, sess := streamPair(t, newMemNet(), srv)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := sess.NewStream(ctx, "Wait")
	must(t, err)
	<-inRecv
	time.Sleep(20 * time.Millisecond) // the parked exchanges are in place: the session is quiet
	before := sess.Endpoint().Stats().PacketsOut
	cancel()
	cause := <-seen
	sent := sess.Endpoint().Stats().PacketsOut - before
	if erpc.CodeOf(cause) != erpc.Canceled {
		t.Fatalf("the handler's context ended with %v", cause)
	}
	if sent < 1 || sent > 3 {
		t.Fatalf("the client sent %d packets between its cancel and the handler's end", sent)
	}
	if _, err := st.Recv(); !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's Recv after its cancel: %v", err)
	}
}

// TestStreamStatusAndTrailers: a handler's error reaches Recv with its
// code, message, details and trailers, after the messages it sent.
func TestStreamStatusAndTrailers(t *testing.T) {
	checkLeaks(t)
	srv := streamServer(t, "Fail", func(s erpc.ServerStream) error {
		must(t, s.SendHeader(erpc.Pairs("h", "1")))
		if err := s.SetHeader(erpc.Pairs("late", "x")); err == nil {
			t.Error("SetHeader after SendHeader succeeded")
		}
		s.Send([]byte("one"))
		s.SetTrailer(erpc.Pairs("t", "2"))
		return &erpc.Error{Code: erpc.PermissionDenied, Msg: "go away",
			Details: []erpc.Detail{{Type: "x.Why", Value: []byte("because")}}}
	})
	_, sess := streamPair(t, newMemNet(), srv)
	st, err := sess.NewStream(context.Background(), "Fail")
	must(t, err)
	if m, err := st.Recv(); err != nil || string(m) != "one" {
		t.Fatalf("message: %q, %v", m, err)
	}
	_, err = st.Recv()
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.PermissionDenied || e.Msg != "go away" ||
		len(e.Details) != 1 || string(e.Details[0].Value) != "because" {
		t.Fatalf("status %#v", err)
	}
	if h, _ := st.Header(); h.Get("h") != "1" || h.Get("late") != "" {
		t.Fatalf("header %v", h)
	}
	if st.Trailer().Get("t") != "2" {
		t.Fatalf("trailer %v", st.Trailer())
	}
}

// TestStreamDeadline: the client's deadline reaches the handler's
// context, and its passing ends both sides with DeadlineExceeded.
func TestStreamDeadline(t *testing.T) {
	checkLeaks(t)
	handlerErr := make(chan error, 1)
	srv := streamServer(t, "Wait", func(s erpc.ServerStream) error {
		if _, ok := s.Context().Deadline(); !ok {
			t.Error("the handler's context has no deadline")
		}
		_, err := s.Recv()
		handlerErr <- err
		return err
	})
	_, sess := streamPair(t, newMemNet(), srv)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	st, err := sess.NewStream(ctx, "Wait")
	must(t, err)
	if _, err := st.Recv(); erpc.CodeOf(err) != erpc.DeadlineExceeded || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("client: %v", err)
	}
	if err := <-handlerErr; erpc.CodeOf(err) != erpc.DeadlineExceeded {
		t.Fatalf("handler: %v", err)
	}
}

// TestStreamSessionClose: closing the client's session mid-stream ends
// the handler's context and fails the client's stream with Unavailable.
func TestStreamSessionClose(t *testing.T) {
	checkLeaks(t)
	inRecv := make(chan struct{})
	handlerErr := make(chan error, 1)
	srv := streamServer(t, "Wait", func(s erpc.ServerStream) error {
		close(inRecv)
		_, err := s.Recv()
		handlerErr <- err
		return err
	})
	_, sess := streamPair(t, newMemNet(), srv)
	st, err := sess.NewStream(context.Background(), "Wait")
	must(t, err)
	<-inRecv
	recvErr := make(chan error, 1)
	go func() { _, err := st.Recv(); recvErr <- err }()
	sess.Close()
	if err := <-recvErr; erpc.CodeOf(err) != erpc.Unavailable {
		t.Fatalf("client: %v", err)
	}
	if err := <-handlerErr; erpc.CodeOf(err) != erpc.Unavailable {
		t.Fatalf("handler: %v", err)
	}
	if err := st.Send([]byte("x")); erpc.CodeOf(err) != erpc.Unavailable {
		t.Fatalf("Send after the session's end: %v", err)
	}
}

// TestStreamServerShutdown: Shutdown ends the streams it finds at once,
// both sides, with Unavailable, and does not wait for them.
func TestStreamServerShutdown(t *testing.T) {
	checkLeaks(t)
	inSend := make(chan struct{})
	handlerErr := make(chan error, 1)
	srv := streamServer(t, "Flood", func(s erpc.ServerStream) error {
		close(inSend)
		for {
			if err := s.Send(make([]byte, 10)); err != nil { // blocks once the window is used
				handlerErr <- err
				return err
			}
		}
	})
	sep, sess := streamPair(t, newMemNet(), srv)
	st, err := sess.NewStream(context.Background(), "Flood", erpc.StreamWindow(4, 1<<20))
	must(t, err)
	<-inSend
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sep.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-handlerErr; erpc.CodeOf(err) != erpc.Unavailable {
		t.Fatalf("handler: %v", err)
	}
	for {
		_, err := st.Recv()
		if err == nil {
			continue // the messages sent before
		}
		if erpc.CodeOf(err) != erpc.Unavailable {
			t.Fatalf("client: %v", err)
		}
		break
	}
}

// TestStreamServerClose: closing the server's endpoint mid-stream ends
// the handler's context and fails the client's stream with Unavailable.
func TestStreamServerClose(t *testing.T) {
	checkLeaks(t)
	inRecv := make(chan struct{})
	handlerErr := make(chan error, 1)
	srv := streamServer(t, "Wait", func(s erpc.ServerStream) error {
		close(inRecv)
		_, err := s.Recv()
		handlerErr <- err
		return err
	})
	sep, sess := streamPair(t, newMemNet(), srv, erpc.WithFailureTimeout(300*time.Millisecond))
	st, err := sess.NewStream(context.Background(), "Wait")
	must(t, err)
	<-inRecv
	sep.Close()
	if err := <-handlerErr; erpc.CodeOf(err) != erpc.Unavailable || !strings.Contains(err.Error(), "this endpoint closed") {
		t.Fatalf("the handler's Recv after its endpoint closed: %v, want Unavailable saying this endpoint closed", err)
	}
	if _, err := st.Recv(); erpc.CodeOf(err) != erpc.Unavailable {
		t.Fatalf("client: %v", err)
	}
}

// TestStreamSurvivesFullServer: exchanges a full server refuses (NACK,
// never run) are sent again after a backoff: the stream loses nothing
// and fails nothing while the server is full for a few milliseconds.
func TestStreamSurvivesFullServer(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	got := make(chan uint64, 100)
	srv := erpc.NewServer()
	must(t, srv.Handle("Hold", func(ctx context.Context, _ []byte) ([]byte, error) {
		<-release
		return nil, nil
	}, erpc.Background()))
	must(t, srv.HandleStream("Sink", func(s erpc.ServerStream) error {
		for {
			m, err := s.Recv()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			got <- binary.LittleEndian.Uint64(m)
		}
	}))
	n := newMemNet()
	// One held request at most besides the stream's two parked
	// exchanges, which do not count against the limit.
	sep := n.Listen(t, srv, erpc.WithMaxHeldRequests(1))
	sess := dialT(t, n, n.Listen(t, nil), sep)
	other := dialT(t, n, n.Listen(t, nil), sep)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := sess.NewStream(ctx, "Sink")
	must(t, err)
	time.Sleep(20 * time.Millisecond) // the parked exchanges are in
	held := make(chan error, 1)
	go func() { _, err := other.Call(ctx, "Hold", nil, nil); held <- err }()
	waitFor(t, "the server full", func() bool {
		st := sep.Stats()
		return st.HeldRequests-st.ParkedRequests >= 1 && st.ParkedRequests == 2
	})
	for i := range uint64(10) {
		must(t, st.Send(binary.LittleEndian.AppendUint64(nil, i)))
	}
	waitFor(t, "an exchange refused", func() bool { return sess.Endpoint().Stats().NacksReceived > 0 })
	time.Sleep(5 * time.Millisecond)
	close(release)
	must(t, <-held)
	must(t, st.CloseSend())
	for i := range uint64(10) {
		select {
		case v := <-got:
			if v != i {
				t.Fatalf("message %d arrived as %d", i, v)
			}
		case <-ctx.Done():
			_, err := st.Recv()
			t.Fatalf("message %d never arrived; the stream: %v", i, err)
		}
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// TestStreamsLeaveSlotsForCalls: however many streams a session has (20
// here, each with a blocked handler), they hold at most four of its
// request slots, and unary calls on the same session, eight at a time,
// all complete.
func TestStreamsLeaveSlotsForCalls(t *testing.T) {
	checkLeaks(t)
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Stuck", func(s erpc.ServerStream) error {
		for {
			if err := s.Send(make([]byte, 10)); err != nil {
				return err
			}
		}
	}))
	must(t, srv.Handle("Echo", echoHandler))
	_, sess := streamPair(t, newMemNet(), srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 20 {
		if _, err := sess.NewStream(ctx, "Stuck", erpc.StreamWindow(2, 100)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var done atomic.Int64
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := sess.Call(ctx, "Echo", []byte("x"), nil); err != nil {
					t.Error(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if done.Load() != 400 {
		t.Fatalf("%d of 400 calls completed beside 20 stuck streams", done.Load())
	}
}
