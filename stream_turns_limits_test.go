package erpc_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestServerStreamClientSmallMaxMessage: the client's endpoint
// takes messages of at most 4 KiB (WithMaxMessageSize), the server's the
// default. A handler sends 200 messages of 100 bytes (each far under
// either limit); the client must get them all, in order, and io.EOF.
func TestServerStreamClientSmallMaxMessage(t *testing.T) {
	checkLeaks(t)
	const count, size = 200, 100
	srv := streamServer(t, "Burst", func(s erpc.ServerStream) error {
		for i := range count {
			if err := s.Send(seqMsg(uint64(i), size)); err != nil {
				return err
			}
		}
		return nil
	})
	n := newMemNet()
	sep := n.Listen(t, srv)
	cli := n.Listen(t, nil, erpc.WithMaxMessageSize(4096))
	sess := dialT(t, n, cli, sep)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := sess.NewStream(ctx, "Burst")
	if err != nil {
		t.Fatal(err)
	}
	st.CloseSend()
	for i := range count {
		m, err := st.Recv()
		if err != nil {
			t.Fatalf("Recv %d of %d: %v", i, count, err)
		}
		if string(m) != string(seqMsg(uint64(i), size)) {
			t.Fatalf("message %d wrong", i)
		}
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// TestGrantOverflowsBatch: both ends take messages of at most 4 KiB.
// Stream "Sink" carries a flood of 1-byte client messages (a big
// window, so the client's queued output fills whole exchanges); stream
// "Tick" carries server messages the client reads with a window of two
// (a Grant due after each Recv). Every message is far under the limit;
// both streams must end cleanly with everything delivered.
func TestGrantOverflowsBatch(t *testing.T) { grantOverflowsBatch(t, 4096, 20000, 1) }

// TestGrantOverflowsBatch1MiB: the same at WithMaxMessageSize(1 MiB),
// where the batch (1 MiB) is the message limit, with 100-byte messages.
func TestGrantOverflowsBatch1MiB(t *testing.T) { grantOverflowsBatch(t, 1<<20, 100000, 100) }

func grantOverflowsBatch(t *testing.T, maxMsg, flood, size int) {
	checkLeaks(t)
	const ticks = 2000
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Sink", func(s erpc.ServerStream) error {
		n := 0
		for {
			_, err := s.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			n++
		}
		return s.Send(seqMsg(uint64(n), 8))
	}))
	must(t, srv.HandleStream("Tick", func(s erpc.ServerStream) error {
		for i := range ticks {
			if err := s.Send(seqMsg(uint64(i), 8)); err != nil {
				return err
			}
		}
		return nil
	}))
	n := newMemNet()
	_, sess := streamPair(t, n, srv, erpc.WithMaxMessageSize(maxMsg))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sink, err := sess.NewStream(ctx, "Sink")
	if err != nil {
		t.Fatal(err)
	}
	tick, err := sess.NewStream(ctx, "Tick", erpc.StreamWindow(2, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	tick.CloseSend()
	done := make(chan error, 1)
	go func() {
		for i := range ticks {
			m, err := tick.Recv()
			if err != nil {
				done <- err
				return
			}
			if string(m) != string(seqMsg(uint64(i), 8)) {
				t.Errorf("tick %d wrong", i)
			}
		}
		_, err := tick.Recv()
		if err == io.EOF {
			err = nil
		}
		done <- err
	}()
	for i := range flood {
		if err := sink.Send(make([]byte, size)); err != nil {
			t.Fatalf("Sink Send %d: %v", i, err)
		}
	}
	sink.CloseSend()
	m, err := sink.Recv()
	if err != nil {
		t.Fatalf("Sink's answer: %v", err)
	}
	if string(m) != string(seqMsg(uint64(flood), 8)) {
		t.Errorf("the handler counted %d messages, want %d", m[0], flood)
	}
	if err := <-done; err != nil {
		t.Fatalf("Tick: %v", err)
	}
}

// TestClientStreamServerSmallMaxMessage: the server's endpoint takes
// messages of at most 4 KiB, the client's the default. The client sends
// 200 messages of 100 bytes in a burst; the handler must count them all.
func TestClientStreamServerSmallMaxMessage(t *testing.T) {
	checkLeaks(t)
	const count, size = 200, 100
	srv := streamServer(t, "Count", func(s erpc.ServerStream) error {
		n := 0
		for {
			_, err := s.Recv()
			if err == io.EOF {
				return s.Send(seqMsg(uint64(n), 8))
			}
			if err != nil {
				return err
			}
			n++
		}
	})
	n := newMemNet()
	sep := n.Listen(t, srv, erpc.WithMaxMessageSize(4096))
	cli := n.Listen(t, nil)
	sess := dialT(t, n, cli, sep)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := sess.NewStream(ctx, "Count")
	if err != nil {
		t.Fatal(err)
	}
	for i := range count {
		if err := st.Send(seqMsg(uint64(i), size)); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	st.CloseSend()
	m, err := st.Recv()
	if err != nil {
		t.Fatalf("answer: %v", err)
	}
	if string(m) != string(seqMsg(count, 8)) {
		t.Fatalf("the handler counted %d, want %d", m[0], count)
	}
}

// TestGrantOverflowsAnswer: the server's side of
// TestGrantOverflowsBatch. Both ends take at most 4 KiB. "Flood"'s
// handler sends 1-byte messages (its queued output fills whole answers);
// "Up" carries client messages its handler reads with a window of two (a
// Grant due in the server's answers after each Recv).
func TestGrantOverflowsAnswer(t *testing.T) {
	checkLeaks(t)
	const flood, ups = 20000, 2000
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Flood", func(s erpc.ServerStream) error {
		for i := range flood {
			if err := s.Send([]byte{byte(i)}); err != nil {
				return err
			}
		}
		return nil
	}))
	must(t, srv.HandleStream("Up", func(s erpc.ServerStream) error {
		n := 0
		for {
			_, err := s.Recv()
			if err == io.EOF {
				return s.Send(seqMsg(uint64(n), 8))
			}
			if err != nil {
				return err
			}
			n++
		}
	}, erpc.StreamWindow(2, 1<<20)))
	n := newMemNet()
	_, sess := streamPair(t, n, srv, erpc.WithMaxMessageSize(4096))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fl, err := sess.NewStream(ctx, "Flood")
	if err != nil {
		t.Fatal(err)
	}
	fl.CloseSend()
	up, err := sess.NewStream(ctx, "Up")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for i := range ups {
			if err := up.Send(seqMsg(uint64(i), 8)); err != nil {
				done <- err
				return
			}
		}
		up.CloseSend()
		m, err := up.Recv()
		if err == nil && string(m) != string(seqMsg(ups, 8)) {
			t.Errorf("Up's handler counted %d", m[0])
		}
		done <- err
	}()
	for i := range flood {
		m, err := fl.Recv()
		if err != nil {
			t.Fatalf("Flood Recv %d: %v", i, err)
		}
		if len(m) != 1 || m[0] != byte(i) {
			t.Fatalf("Flood message %d wrong", i)
		}
	}
	if _, err := fl.Recv(); err != io.EOF {
		t.Fatalf("Flood end: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Up: %v", err)
	}
}
