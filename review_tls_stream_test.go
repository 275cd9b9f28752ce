package erpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewTLSStreamsThroughFaults: streams over TLS through faultRelay
// (loss, duplication, reordering, late copies, address moves). An echo
// stream handler returns each message; the client sends 300 numbered
// messages of up to 6 KB on each of 3 streams in turn and must read
// every one back, once, in order, and the stream must end cleanly.
func TestReviewTLSStreamsThroughFaults(t *testing.T) {
	pki := newTestPKI(t)
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Echo", echoBack))
	sep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()))
	relay := newFaultRelay(t, sep.Addr(), 11)
	cep := listenT(t, nil, "127.0.0.1:0", erpc.WithTLS(pki.clientTLS()))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := cep.Dial(ctx, relay.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(11, 3))
	for k := range 3 {
		st, err := s.NewStream(ctx, "Echo")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 300 {
			if i == 150 {
				relay.move(t)
			}
			m := make([]byte, 4+rng.IntN(6000))
			binary.LittleEndian.PutUint32(m, uint32(k<<16|i))
			m[len(m)-1] = byte(i)
			if err := st.Send(m); err != nil {
				t.Fatalf("stream %d send %d: %v", k, i, err)
			}
			got, err := st.Recv()
			if err != nil || !bytes.Equal(got, m) {
				t.Fatalf("stream %d message %d: %v (same %v)", k, i, err, bytes.Equal(got, m))
			}
		}
		if err := st.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != io.EOF {
			t.Fatalf("stream %d end: %v, want io.EOF", k, err)
		}
	}
	relay.mu.Lock()
	c := relay.counts
	relay.mu.Unlock()
	if c.lost == 0 || c.dup == 0 || c.reordered == 0 || c.moves == 0 {
		t.Fatalf("faults %+v: the attack did not happen", c)
	}
	t.Logf("faults %+v; server replays %d", c, sep.Stats().TLSReplays)
}
