package erpc_test

import (
	"context"
	"encoding/binary"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
)

// limitPair serves srv on a fresh memnet with srvOpts and dials it from
// an endpoint with cliOpts.
func limitPair(t *testing.T, srv *erpc.Server, srvOpts []erpc.Option, cliOpts ...erpc.Option) (srvEP, cliEP *erpc.Endpoint, sess *erpc.Session) {
	t.Helper()
	n := memnet.NewNetwork(1, memnet.LinkConfig{})
	srvEP = listenT(t, srv, "", append(srvOpts, erpc.WithTransport(mustListen(t, n)))...)
	cliEP = listenT(t, nil, "", append(cliOpts, erpc.WithTransport(mustListen(t, n)))...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := cliEP.Dial(ctx, srvEP.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return srvEP, cliEP, sess
}

// TestStreamHostileGrantCapped: a client that speaks the frames itself
// opens a stream with a window of one message and one byte, then sends a
// Grant of 2^62 messages and bytes. No grant may let the handler get
// further ahead of the client's reading than the window it announced
// (itself capped at 65,536 messages and 64 MiB): its Send blocks after
// one more message, and the server counts the hostile grant as refused.
func TestStreamHostileGrantCapped(t *testing.T) {
	checkLeaks(t)
	const size, stopAt = 64 << 10, 64
	var sent atomic.Int64
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Flood", func(s erpc.ServerStream) error {
		b := make([]byte, size)
		for sent.Load() < stopAt {
			if err := s.Send(b); err != nil {
				return err
			}
			sent.Add(1)
		}
		<-s.Context().Done()
		return nil
	}))
	srvEP, _, sess := limitPair(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	const id = 7
	open := binary.AppendUvarint(nil, id)
	open = binary.AppendUvarint(open, 1) // window: one message
	open = binary.AppendUvarint(open, 1) // and one byte
	if _, err := sess.Call(ctx, "erpc.stream/open", append(open, "Flood"...), nil); err != nil {
		t.Fatalf("raw open: %v", err)
	}
	waitFor(t, "the first Send", func() bool { return sent.Load() == 1 })
	refused := srvEP.StreamStats().Refused
	grant := []byte{0, 4} // flags (no park), Grant
	grant = binary.AppendUvarint(grant, id)
	grant = binary.AppendUvarint(grant, 1<<62)
	grant = binary.AppendUvarint(grant, 1<<62)
	if _, err := sess.Call(ctx, "erpc.stream/exchange", grant, nil); err != nil {
		t.Fatalf("raw grant: %v", err)
	}
	waitFor(t, "the Send the clamped grant allows", func() bool { return sent.Load() >= 2 })
	time.Sleep(200 * time.Millisecond) // room for any Send beyond it
	if n := sent.Load(); n != 2 {
		t.Errorf("the handler sent %d messages of %d KiB to a client with a one-message window that read none, want 2", n, size>>10)
	}
	if got := srvEP.StreamStats().Refused - refused; got != 1 {
		t.Errorf("the hostile grant counted %d times in StreamStats.Refused, want 1", got)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func smallWindowServer(t *testing.T, opened *atomic.Int64) *erpc.Server {
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Park", func(s erpc.ServerStream) error {
		opened.Add(1)
		<-s.Context().Done()
		return nil
	}))
	must(t, srv.HandleStream("Echo", func(s erpc.ServerStream) error {
		for {
			m, err := s.Recv()
			if err != nil {
				return nil
			}
			if err := s.Send(m); err != nil {
				return err
			}
		}
	}))
	must(t, srv.Handle("Ping", echoHandler))
	return srv
}

// TestStreamSmallWindow: with a session window (WithWindow, on the
// client or on the server, which caps the client's) of 2 or more, an
// open stream leaves a slot for its own messages, for unary calls and
// for more streams; with a window of 1 a stream cannot work, and
// NewStream says so naming WithWindow instead of hanging.
func TestStreamSmallWindow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cli, srv int
	}{{"client1", 1, 0}, {"server1", 0, 1}, {"client2", 2, 0}, {"server2", 0, 2}, {"client3", 3, 0}, {"client4", 4, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			var opened atomic.Int64
			var cliOpts, srvOpts []erpc.Option
			if tc.cli > 0 {
				cliOpts = append(cliOpts, erpc.WithWindow(tc.cli))
			}
			if tc.srv > 0 {
				srvOpts = append(srvOpts, erpc.WithWindow(tc.srv))
			}
			_, _, sess := limitPair(t, smallWindowServer(t, &opened), srvOpts, cliOpts...)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_, err := sess.NewStream(ctx, "Park")
			if tc.cli == 1 || tc.srv == 1 {
				if erpc.CodeOf(err) != erpc.FailedPrecondition || !strings.Contains(err.Error(), "WithWindow") {
					t.Fatalf("a stream with a session window of 1: %v, want FailedPrecondition naming WithWindow", err)
				}
				if _, err := sess.Call(ctx, "Ping", []byte("x"), nil); err != nil {
					t.Fatalf("a unary call after the refused stream: %v", err)
				}
				return
			}
			must(t, err)
			if _, err := sess.Call(ctx, "Ping", []byte("x"), nil); err != nil {
				t.Fatalf("a unary call beside an idle stream: %v", err)
			}
			if _, err := sess.NewStream(ctx, "Park"); err != nil {
				t.Fatalf("a second stream beside an idle one: %v", err)
			}
			st, err := sess.NewStream(ctx, "Echo")
			must(t, err)
			for i := range 20 {
				must(t, st.Send([]byte{byte(i)}))
				if m, err := st.Recv(); err != nil || m[0] != byte(i) {
					t.Fatalf("echo %d: %v %v", i, m, err)
				}
			}
			if _, err := sess.Call(ctx, "Ping", []byte("x"), nil); err != nil {
				t.Fatalf("a unary call beside three streams: %v", err)
			}
		})
	}
}
