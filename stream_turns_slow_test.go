package erpc_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestSlowReaderHoldsOnlyItsOwn: four streams whose client never
// reads fill their windows (64 KiB messages, and a few 1 MiB-64 ones:
// frames larger than a turn); a fifth stream's 3000 small messages, and
// a bidi echo's 500 round trips, must all arrive meanwhile.
func TestSlowReaderHoldsOnlyItsOwn(t *testing.T) {
	checkLeaks(t)
	var blockedSends atomic.Int64
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Bulk", func(s erpc.ServerStream) error {
		big := make([]byte, 1<<20-64)
		mid := make([]byte, 64<<10)
		for i := 0; ; i++ {
			m := mid
			if i%7 == 3 {
				m = big
			}
			if err := s.Send(m); err != nil {
				return err
			}
			blockedSends.Add(1)
		}
	}))
	must(t, srv.HandleStream("Small", func(s erpc.ServerStream) error {
		for i := range 3000 {
			if err := s.Send(seqMsg(uint64(i), 16)); err != nil {
				return err
			}
		}
		return nil
	}))
	must(t, srv.HandleStream("Echo", echoBack))
	n := newMemNet()
	_, sess := streamPair(t, n, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 4 {
		st, err := sess.NewStream(ctx, "Bulk")
		if err != nil {
			t.Fatal(err)
		}
		st.CloseSend()
	}
	waitFor(t, "bulk streams sending", func() bool { return blockedSends.Load() > 40 })
	small, err := sess.NewStream(ctx, "Small")
	if err != nil {
		t.Fatal(err)
	}
	small.CloseSend()
	echo, err := sess.NewStream(ctx, "Echo")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := echo.Send(seqMsg(uint64(i), 32)); err != nil {
			t.Fatalf("echo Send %d: %v", i, err)
		}
		m, err := echo.Recv()
		if err != nil || string(m) != string(seqMsg(uint64(i), 32)) {
			t.Fatalf("echo %d: %v", i, err)
		}
	}
	for i := range 3000 {
		m, err := small.Recv()
		if err != nil || string(m) != string(seqMsg(uint64(i), 16)) {
			t.Fatalf("small %d: %v", i, err)
		}
	}
	if _, err := small.Recv(); err != io.EOF {
		t.Fatalf("small end: %v", err)
	}
	t.Logf("bulk sends: %d", blockedSends.Load())
}
