package erpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// streamPair serves srv on a fresh memnet and dials it.
func streamPair(t *testing.T, n *memNet, srv *erpc.Server, opts ...erpc.Option) (*erpc.Endpoint, *erpc.Session) {
	t.Helper()
	sep := n.Listen(t, srv, opts...)
	cli := n.Listen(t, nil, opts...)
	return sep, dialT(t, n, cli, sep)
}

func streamServer(t *testing.T, method string, fn erpc.StreamHandler, opts ...erpc.StreamOption) *erpc.Server {
	t.Helper()
	srv := erpc.NewServer()
	if err := srv.HandleStream(method, fn, opts...); err != nil {
		t.Fatal(err)
	}
	return srv
}

func seqMsg(i uint64, size int) []byte {
	b := make([]byte, max(size, 8))
	binary.LittleEndian.PutUint64(b, i)
	for j := 8; j < len(b); j++ {
		b[j] = byte(i + uint64(j))
	}
	return b[:max(size, 8)]
}

// TestStreamShapes: server-streaming, client-streaming and bidirectional
// streams end to end, with metadata, headers, trailers and the status.
func TestStreamShapes(t *testing.T) {
	checkLeaks(t)
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Count", func(s erpc.ServerStream) error {
		req, err := s.Recv()
		if err != nil {
			return err
		}
		md, _ := erpc.IncomingMetadata(s.Context())
		s.SetHeader(erpc.Pairs("who", md.Get("who")))
		n := binary.LittleEndian.Uint64(req)
		for i := range n {
			if err := s.Send(seqMsg(i, 100)); err != nil {
				return err
			}
		}
		s.SetTrailer(erpc.Pairs("sent", "yes"))
		return nil
	}))
	must(t, srv.HandleStream("Sum", func(s erpc.ServerStream) error {
		var sum uint64
		for {
			m, err := s.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			sum += binary.LittleEndian.Uint64(m)
		}
		return s.Send(binary.LittleEndian.AppendUint64(nil, sum))
	}))
	must(t, srv.HandleStream("Echo", func(s erpc.ServerStream) error {
		for {
			m, err := s.Recv()
			if err == io.EOF {
				return erpc.Errorf(erpc.NotFound, "done echoing")
			}
			if err != nil {
				return err
			}
			if err := s.Send(m); err != nil {
				return err
			}
		}
	}))
	n := newMemNet()
	_, sess := streamPair(t, n, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Server streaming.
	st, err := sess.NewStream(erpc.AppendToOutgoingContext(ctx, "who", "me"), "Count")
	must(t, err)
	must(t, st.Send(binary.LittleEndian.AppendUint64(nil, 3000)))
	must(t, st.CloseSend())
	hd, err := st.Header()
	if err != nil || hd.Get("who") != "me" {
		t.Fatalf("header %v, %v", hd, err)
	}
	for i := range uint64(3000) {
		m, err := st.Recv()
		if err != nil || !bytes.Equal(m, seqMsg(i, 100)) {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	if st.Trailer().Get("sent") != "yes" {
		t.Fatalf("trailer %v", st.Trailer())
	}

	// Client streaming.
	st, err = sess.NewStream(ctx, "Sum")
	must(t, err)
	var want uint64
	for i := range uint64(5000) {
		want += i
		must(t, st.Send(binary.LittleEndian.AppendUint64(nil, i)))
	}
	must(t, st.CloseSend())
	m, err := st.Recv()
	if err != nil || binary.LittleEndian.Uint64(m) != want {
		t.Fatalf("sum %v, want %d", err, want)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}

	// Bidirectional, with messages of several packets, and an error status.
	st, err = sess.NewStream(ctx, "Echo")
	must(t, err)
	for i, size := range []int{0, 8, 1500, 70000, 1 << 20} {
		msg := seqMsg(uint64(i), size)
		must(t, st.Send(msg))
		got, err := st.Recv()
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("echo of %d bytes: %v", size, err)
		}
	}
	must(t, st.CloseSend())
	_, err = st.Recv()
	if erpc.CodeOf(err) != erpc.NotFound || !errors.As(err, new(*erpc.Error)) {
		t.Fatalf("status %v", err)
	}
	if err := st.Send([]byte("late")); err != io.EOF {
		t.Fatalf("Send after the end: %v", err)
	}

	// A method the server does not have.
	if _, err := sess.NewStream(ctx, "Nope"); erpc.CodeOf(err) != erpc.Unimplemented {
		t.Fatalf("unknown method: %v", err)
	}
	if got := srv.Methods(); len(got) != 3 {
		t.Fatalf("methods %v: want the three streams only", got)
	}
	unary := n.Listen(t, serverWith(t, "Echo", echoHandler))
	if _, err := dialT(t, n, n.Listen(t, nil), unary).NewStream(ctx, "Count"); erpc.CodeOf(err) != erpc.Unimplemented ||
		!strings.Contains(err.Error(), "serves no streams") {
		t.Fatalf("a stream to a server without any: %v", err)
	}
}
