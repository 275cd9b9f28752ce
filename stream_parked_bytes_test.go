package erpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/stream"
)

// TestParkedBatchesLeaveRoomForCalls: an exchange a client parks may
// carry its stream's messages (erpc's own client fills a parked exchange
// with its queued output); once the server has taken them into the
// stream's window, the batch they came in is dead weight. Held for as
// long as the stream stays idle, it must not make the server refuse
// other clients' calls: here two clients each park two exchanges of one
// 900 KiB message for a stream whose handler is idle, at a
// WithMaxHeldBytes of 4 MiB, and a third client's call must still go
// through.
func TestParkedBatchesLeaveRoomForCalls(t *testing.T) {
	checkLeaks(t)
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Idle", func(s erpc.ServerStream) error {
		<-s.Context().Done()
		return nil
	}))
	must(t, srv.Handle("Echo", echoHandler))
	n := newMemNet()
	sep := n.Listen(t, srv, erpc.WithMaxHeldBytes(4<<20))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msg := make([]byte, 900<<10)
	parked := make(chan error, 4)
	for range 2 {
		sess := dialT(t, n, n.Listen(t, nil), sep)
		must(t, rawOpen(t, sess, 1, "Idle"))
		for seq := range 2 { // messages 0 and 1 of stream 1, well within its 4 MiB window
			req := append([]byte{1}, stream.AppendData(nil, 1, uint64(seq), msg)...) // flags: park
			go func() { _, err := sess.Call(ctx, "erpc.stream/exchange", req, nil); parked <- err }()
		}
	}
	waitFor(t, "four parked exchanges", func() bool { return sep.Stats().ParkedRequests == 4 })
	if got := sep.StreamStats().Refused; got != 0 {
		t.Fatalf("%d frames refused: the messages were not all taken", got)
	}
	t.Logf("server holds %d bytes for %d parked exchanges", sep.Stats().HeldBytes, sep.Stats().ParkedRequests)
	sess := dialT(t, n, n.Listen(t, nil), sep)
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	if _, err := sess.Call(cctx, "Echo", []byte("x"), nil); err != nil {
		t.Fatalf("a third client's call beside two idle streams whose parked exchanges carried their messages: %v", err)
	}
}
