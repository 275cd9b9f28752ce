package erpc_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestStreamDocumentedEdges: what the ClientStream and StreamHandler docs
// promise at the edges. CloseSend twice returns nil; Send after CloseSend
// fails with FailedPrecondition; Trailer is nil until Recv returned the
// handler's end, then the handler's trailers; a handler's panic ends its
// stream with Internal and the endpoint goes on serving streams.
func TestStreamDocumentedEdges(t *testing.T) {
	checkLeaks(t)
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Drain", func(s erpc.ServerStream) error {
		s.SetTrailer(erpc.Pairs("t", "1"))
		for {
			if _, err := s.Recv(); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
		}
	}))
	must(t, srv.HandleStream("Panic", func(s erpc.ServerStream) error {
		panic("boom")
	}))
	logs := &recordHandler{}
	_, _, sess := limitPair(t, srv, []erpc.Option{erpc.WithLogger(slog.New(logs))})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	st, err := sess.NewStream(ctx, "Drain")
	must(t, err)
	if md := st.Trailer(); md != nil {
		t.Errorf("Trailer before the end: %v, want nil", md)
	}
	must(t, st.CloseSend())
	if err := st.CloseSend(); err != nil {
		t.Errorf("a second CloseSend: %v, want nil", err)
	}
	if err := st.Send([]byte("x")); erpc.CodeOf(err) != erpc.FailedPrecondition {
		t.Errorf("Send after CloseSend: %v, want FailedPrecondition", err)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("Recv at the end: %v", err)
	}
	if st.Trailer().Get("t") != "1" {
		t.Errorf("Trailer after the end: %v", st.Trailer())
	}
	if err := st.CloseSend(); err != nil {
		t.Errorf("CloseSend after the end: %v, want nil", err)
	}

	for range 2 { // the endpoint survives the first
		ps, err := sess.NewStream(ctx, "Panic")
		must(t, err)
		if _, err := ps.Recv(); erpc.CodeOf(err) != erpc.Internal || !strings.Contains(err.Error(), "handler panicked") {
			t.Fatalf("Recv from a handler that panicked: %v, want Internal", err)
		}
	}
	panics := 0
	for _, m := range logs.messages() {
		if strings.Contains(m, `stream handler "Panic" panicked`) {
			panics++
		}
	}
	if panics != 2 {
		t.Errorf("%d panics logged, want 2", panics)
	}
	st2, err := sess.NewStream(ctx, "Drain")
	must(t, err)
	must(t, st2.CloseSend())
	if _, err := st2.Recv(); err != io.EOF {
		t.Fatalf("a stream after the panics: %v", err)
	}
}
