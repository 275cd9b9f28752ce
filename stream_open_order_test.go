package erpc_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
)

// TestStreamFramesBeforeOpenAnswer (r): a handler that sends at once (a
// server-streaming "Watch" that needs no request message) has its
// frames go in the answer to an exchange the client parked for its
// other streams, while the answer to the stream's opening may still be
// on its way (lost and sent again, or held back). Whatever comes first,
// the client gets the header, the message and the status. The client
// dropped the frames of a stream whose opening it had not yet seen
// answered ("canceled here meanwhile"): Recv waited forever for a
// message that had come.
func TestStreamFramesBeforeOpenAnswer(t *testing.T) {
	checkLeaks(t)
	net := memnet.NewNetwork(5, memnet.LinkConfig{Reorder: 0.3, ReorderDelay: 3 * time.Millisecond})
	n := &memNet{net}
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Keep", func(s erpc.ServerStream) error {
		<-s.Context().Done()
		return nil
	}))
	must(t, srv.HandleStream("Watch", func(s erpc.ServerStream) error {
		s.SetTrailer(erpc.Metadata{"t": {"w"}})
		return s.Send([]byte("hi"))
	}))
	_, sess := streamPair(t, n, srv)
	keepCtx, stopKeep := context.WithCancel(context.Background())
	defer stopKeep()
	if _, err := sess.NewStream(keepCtx, "Keep"); err != nil { // parks exchanges for the session
		t.Fatal(err)
	}
	const rounds, streams = 20, 8
	for r := range rounds {
		var wg sync.WaitGroup
		for range streams {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang, not a measure
				defer cancel()
				st, err := sess.NewStream(ctx, "Watch")
				if err != nil {
					t.Errorf("round %d: NewStream: %v", r, err)
					return
				}
				if m, err := st.Recv(); err != nil || string(m) != "hi" {
					t.Errorf("round %d: Recv = %q, %v; want hi", r, m, err)
					return
				}
				if _, err := st.Recv(); err != io.EOF {
					t.Errorf("round %d: end %v, want io.EOF", r, err)
				}
				if st.Trailer().Get("t") != "w" {
					t.Errorf("round %d: trailer %v", r, st.Trailer())
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			break
		}
	}
	if st := net.Stats(); st.Reordered == 0 {
		t.Fatalf("nothing reordered: %+v", st)
	}
}
