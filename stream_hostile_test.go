package erpc_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/stream"
)

// rawOpen opens stream id on method by hand, as a client that does not
// use NewStream would.
func rawOpen(t *testing.T, sess *erpc.Session, id uint64, method string) error {
	t.Helper()
	b := binary.AppendUvarint(nil, id)
	b = binary.AppendUvarint(b, 4)
	b = binary.AppendUvarint(b, 1000)
	_, err := sess.Call(context.Background(), "erpc.stream/open", append(b, method...), nil)
	return err
}

func rawExchange(t *testing.T, sess *erpc.Session, frames []byte) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return sess.Call(ctx, "erpc.stream/exchange", append([]byte{0}, frames...), nil)
}

// TestStreamHostileClient: frames no NewStream client sends (unknown
// streams, messages beyond the window, huge sequence numbers, a second
// open of one ID, malformed batches) are refused and counted; the
// server never panics, and a stream whose client broke the protocol ends
// with Internal.
func TestStreamHostileClient(t *testing.T) {
	checkLeaks(t)
	handlerErr := make(chan error, 4)
	srv := streamServer(t, "H", func(s erpc.ServerStream) error {
		for {
			if _, err := s.Recv(); err != nil {
				handlerErr <- err
				return err
			}
		}
	}, erpc.StreamWindow(4, 1000))
	sep, sess := streamPair(t, newMemNet(), srv)
	refused := func() uint64 { return sep.StreamStats().Refused }

	must(t, rawOpen(t, sess, 7, "H"))
	if err := rawOpen(t, sess, 7, "H"); erpc.CodeOf(err) != erpc.AlreadyExists {
		t.Fatalf("a second open of one ID: %v", err)
	}
	if err := rawOpen(t, sess, 8, "Nope"); erpc.CodeOf(err) != erpc.Unimplemented {
		t.Fatalf("open of an unknown method: %v", err)
	}
	if _, err := sess.Call(context.Background(), "erpc.stream/open", []byte{0xff}, nil); erpc.CodeOf(err) != erpc.InvalidArgument {
		t.Fatalf("malformed open: %v", err)
	}
	base := refused()
	steps := []struct {
		name   string
		frames []byte
	}{
		{"data for an unknown stream", stream.AppendData(nil, 99, 0, []byte("x"))},
		{"grant for an unknown stream", stream.AppendGrant(nil, 1<<40, 1<<60, 1<<60)},
		{"cancel for an unknown stream", stream.AppendCancel(nil, 12345, 1)},
	}
	for i, s := range steps {
		if _, err := rawExchange(t, sess, s.frames); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := refused() - base; got != uint64(i+1) {
			t.Fatalf("%s: %d refusals counted, want %d", s.name, got, i+1)
		}
	}
	if _, err := rawExchange(t, sess, []byte{0x42, 1, 2, 3}); erpc.CodeOf(err) != erpc.InvalidArgument {
		t.Fatalf("malformed batch: %v", err)
	}
	if _, err := rawExchange(t, sess, stream.AppendData(nil, 99, 0, make([]byte, 10))[:5]); erpc.CodeOf(err) != erpc.InvalidArgument {
		t.Fatalf("truncated batch: %v", err)
	}
	before := refused()
	// Stream 7's window is 4 messages: number 1<<62, and then 4, are
	// beyond it; the first refusal ends the stream.
	resp, err := rawExchange(t, sess, stream.AppendData(nil, 7, 1<<62, []byte("far")))
	if err != nil {
		t.Fatal(err)
	}
	if refused() != before+1 {
		t.Fatalf("a message beyond the window was not refused")
	}
	if err := <-handlerErr; erpc.CodeOf(err) != erpc.Internal {
		t.Fatalf("the handler of a stream whose client broke the protocol got %v", err)
	}
	var rd stream.Reader
	rd.Reset(resp)
	var f stream.Frame
	var end bool
	for rd.Next(&f) {
		end = end || (f.Kind == stream.KindEnd && f.Stream == 7 && erpc.Code(f.Code) == erpc.Internal)
	}
	if !end {
		// The End may come in a later answer.
		resp, err = rawExchange(t, sess, nil)
		rd.Reset(resp)
		for err == nil && rd.Next(&f) {
			end = end || (f.Kind == stream.KindEnd && f.Stream == 7 && erpc.Code(f.Code) == erpc.Internal)
		}
	}
	if !end {
		t.Fatal("the client was not told its stream ended with Internal")
	}
	must(t, rawOpen(t, sess, 9, "H"))
	if _, err := rawExchange(t, sess, stream.AppendClose(nil, 9, 1<<50)); err != nil {
		t.Fatal(err)
	}
	if err := <-handlerErr; erpc.CodeOf(err) != erpc.Internal {
		t.Fatalf("an end beyond the window: the handler got %v", err)
	}
	if got := sep.StreamStats(); got.Opened != 2 || got.Refused < before+2 {
		t.Fatalf("stats %+v", got)
	}
}

// TestStreamServerEnforcesDeadline: the server ends a stream whose
// deadline passed on its own, even when the handler ignores its context
// and the client never cancels (a raw client, without NewStream's timer):
// the client's next exchange brings the End with DeadlineExceeded.
func TestStreamServerEnforcesDeadline(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	defer close(release)
	srv := streamServer(t, "Deaf", func(s erpc.ServerStream) error {
		<-release // ignores its context
		return nil
	})
	_, sess := streamPair(t, newMemNet(), srv)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	b := binary.AppendUvarint(nil, 3)
	b = binary.AppendUvarint(b, 4)
	b = binary.AppendUvarint(b, 1000)
	if _, err := sess.Call(ctx, "erpc.stream/open", append(b, "Deaf"...), nil); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := rawExchange(t, sess, nil)
		must(t, err)
		var rd stream.Reader
		rd.Reset(resp)
		var f stream.Frame
		for rd.Next(&f) {
			if f.Kind == stream.KindEnd && f.Stream == 3 {
				if erpc.Code(f.Code) != erpc.DeadlineExceeded {
					t.Fatalf("the stream ended with %v", erpc.Code(f.Code))
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never ended the stream whose deadline passed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// FuzzStreamExchange feeds arbitrary exchange requests to a server with
// open streams: it answers every one (a malformed batch with
// InvalidArgument) and never panics (a panic would come back as Internal,
// "handler panicked").
func FuzzStreamExchange(f *testing.F) {
	f.Add(stream.AppendData(nil, 1, 0, []byte("x")))
	f.Add(stream.AppendClose(stream.AppendData(nil, 2, 0, nil), 2, 1))
	f.Add(stream.AppendGrant(stream.AppendCancel(nil, 1, 1), 3, 1<<62, 1<<62))
	f.Add([]byte{1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1})
	srv := erpc.NewServer()
	if err := srv.HandleStream("F", func(s erpc.ServerStream) error {
		for {
			if _, err := s.Recv(); err != nil {
				return err
			}
			s.Send([]byte("r"))
		}
	}, erpc.StreamWindow(4, 100)); err != nil {
		f.Fatal(err)
	}
	n := newMemNet()
	tr, _ := n.net.Listen("")
	sep, err := srv.Listen("", erpc.WithTransport(tr))
	if err != nil {
		f.Fatal(err)
	}
	defer sep.Close()
	ctr, _ := n.net.Listen("")
	cep, err := erpc.Listen("", erpc.WithTransport(ctr))
	if err != nil {
		f.Fatal(err)
	}
	defer cep.Close()
	sess, err := cep.Dial(context.Background(), sep.Addr().String())
	if err != nil {
		f.Fatal(err)
	}
	var next uint64
	f.Fuzz(func(t *testing.T, frames []byte) {
		next++
		for id := range uint64(4) { // streams 0..3 of this round, open
			b := binary.AppendUvarint(nil, next<<2|id)
			b = binary.AppendUvarint(b, 4)
			b = binary.AppendUvarint(b, 100)
			sess.Call(context.Background(), "erpc.stream/open", append(b, 'F'), nil)
		}
		for park, wait := range []time.Duration{2 * time.Second, 10 * time.Millisecond} {
			ctx, cancel := context.WithTimeout(context.Background(), wait) // a parked one may wait for output
			_, err := sess.Call(ctx, "erpc.stream/exchange", append([]byte{byte(park)}, frames...), nil)
			cancel()
			if erpc.CodeOf(err) == erpc.Internal {
				t.Fatalf("exchange %x: %v", frames, err)
			}
		}
		var end []byte
		for id := range uint64(4) {
			end = stream.AppendCancel(end, next<<2|id, 1)
		}
		rawExchange(t, sess, end) // the round's streams end
	})
}
