package erpc_test

import (
	"context"
	"testing"
)

// TestStreamAllocs counts heap allocations per message pair in a warm
// bidirectional stream (client Send, handler Recv and Send, client
// Recv), client, server and transport together, over memnet: a stream
// allocates when it opens, not per message.
func TestStreamAllocs(t *testing.T) {
	if streamRace {
		t.Skip("the race detector's sync.Pool drops at random: counted without it")
	}
	srv := streamServer(t, "Echo", echoBack)
	_, sess := streamPair(t, newMemNet(), srv)
	st, err := sess.NewStream(context.Background(), "Echo")
	must(t, err)
	defer st.CloseSend()
	msg := make([]byte, 32)
	pair := func() {
		if err := st.Send(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3000 {
		pair()
	}
	allocs := testing.AllocsPerRun(2000, pair)
	t.Logf("%.3f allocations per Send/Recv pair (client + server + transport)", allocs)
	if allocs > 0.05 {
		t.Fatalf("%.3f allocations per message pair in a warm stream, want 0", allocs)
	}
}
