package erpc_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestTLSCalls: over UDP with TLS, calls of every size complete, a
// stream carries its messages, and the handshakes are counted on both
// sides (the session really ran TLS).
func TestTLSCalls(t *testing.T) {
	pki := newTestPKI(t)
	srv := serverWith(t, "Echo", echoHandler)
	sep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, sep.Target(), erpc.WithTLS(pki.clientTLS()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, n := range []int{0, 1, 32, 1400, 1500, 5000, 64 << 10, 1 << 20, 4 << 20} {
		req := bytes.Repeat([]byte{byte(n)}, n)
		resp, err := s.Call(ctx, "Echo", req, nil)
		if err != nil || !bytes.Equal(resp, req) {
			t.Fatalf("size %d: err %v, %d bytes back", n, err, len(resp))
		}
	}
	if st := sep.Stats(); st.TLSHandshakes != 1 || st.TLSOpenFailures != 0 {
		t.Fatalf("server stats: %d handshakes, %d open failures", st.TLSHandshakes, st.TLSOpenFailures)
	}
	if st := s.Endpoint().Stats(); st.TLSHandshakes != 1 {
		t.Fatalf("client: %d handshakes", st.TLSHandshakes)
	}
}
