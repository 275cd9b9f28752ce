package erpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestIdleStreamsLeaveRoomForCalls: a client session with a stream open
// parks two exchange requests at its server, which holds them until a
// stream has output. Idle streams (a "Watch" with nothing to say) must
// not make a server refuse other clients' calls: here two clients' idle
// streams park four requests at a server allowed to hold four
// (WithMaxHeldRequests), and a third client's unary call must go
// through. Before parked requests were kept off that limit, it was
// refused with ResourceExhausted (at the defaults, 2048 client sessions
// each watching one stream made a server refuse every request).
func TestIdleStreamsLeaveRoomForCalls(t *testing.T) {
	checkLeaks(t)
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Watch", func(s erpc.ServerStream) error {
		<-s.Context().Done()
		return nil
	}))
	must(t, srv.Handle("Echo", echoHandler))
	n := newMemNet()
	sep := n.Listen(t, srv, erpc.WithMaxHeldRequests(4))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		sess := dialT(t, n, n.Listen(t, nil), sep)
		if _, err := sess.NewStream(ctx, "Watch"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "four parked exchanges", func() bool { st := sep.Stats(); return st.HeldRequests == 4 && st.ParkedRequests == 4 })
	sess := dialT(t, n, n.Listen(t, nil), sep)
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	if _, err := sess.Call(cctx, "Echo", []byte("x"), nil); err != nil {
		t.Fatalf("a third client's call beside two idle streams: %v", err)
	}
}

// TestParkedExchangesReleasedWithTheirSession: the exchanges a client
// parks at the server are released when its session ends, whichever
// way (the client's Close, its endpoint's, the stream's cancel first):
// the server holds no request for a client that is gone. Repeated, so
// that a leak adds up.
func TestParkedExchangesReleasedWithTheirSession(t *testing.T) {
	checkLeaks(t)
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Watch", func(s erpc.ServerStream) error {
		<-s.Context().Done()
		return nil
	}))
	n := newMemNet()
	sep := n.Listen(t, srv)
	for i := range 6 {
		cep := n.Listen(t, nil)
		sess := dialT(t, n, cep, sep)
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := sess.NewStream(ctx, "Watch"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "two parked exchanges", func() bool { return sep.Stats().ParkedRequests == 2 })
		switch i % 3 {
		case 0:
			sess.Close()
		case 1:
			cep.Close()
		case 2:
			cancel()
			sess.Close()
		}
		cancel()
		waitFor(t, "the session's end at the server", func() bool { return sep.Stats().ServerSessions == 0 })
		waitFor(t, "no request held", func() bool {
			st := sep.Stats()
			return st.HeldRequests == 0 && st.ParkedRequests == 0
		})
		cep.Close()
	}
}
