package erpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestWaitingSessionOutlivesIdleTimeout: a server ends a session it
// hears nothing from for its idle timeout (WithKeepalive), which must
// exceed its clients' keepalive interval, and no more. A client whose
// session waits (a slow call, or an idle stream's parked exchanges) does
// not ping: it probes its waiting calls, and must do so often enough for
// the server to keep the session. Here both ends keep a 20 ms interval
// and a 150 ms idle timeout (the client's failure timeout the default
// 2 s), and a call that takes a second, and a stream idle for a second,
// must both live.
func TestWaitingSessionOutlivesIdleTimeout(t *testing.T) {
	checkLeaks(t)
	wake := make(chan struct{})
	srv := erpc.NewServer()
	must(t, srv.Handle("Slow", func(context.Context, []byte) ([]byte, error) {
		time.Sleep(time.Second)
		return []byte("ok"), nil
	}, erpc.Background()))
	must(t, srv.HandleStream("Later", func(s erpc.ServerStream) error {
		select {
		case <-wake:
		case <-s.Context().Done():
			return s.Context().Err()
		}
		return s.Send([]byte("late"))
	}))
	n := newMemNet()
	ka := erpc.WithKeepalive(20*time.Millisecond, 150*time.Millisecond)
	sep := n.Listen(t, srv, ka)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	sess := dialT(t, n, n.Listen(t, nil, ka), sep)
	if _, err := sess.Call(ctx, "Slow", nil, nil); err != nil {
		t.Errorf("a call of a second, idle timeout 150 ms: %v", err)
	}

	sess = dialT(t, n, n.Listen(t, nil, ka), sep)
	st, err := sess.NewStream(ctx, "Later")
	must(t, err)
	time.Sleep(time.Second)
	close(wake)
	if m, err := st.Recv(); err != nil || string(m) != "late" {
		t.Errorf("a stream idle for a second, idle timeout 150 ms: %q, %v", m, err)
	}
}
