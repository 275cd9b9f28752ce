package erpc_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewTLSSelectiveHandshakeLoss: the relay drops only chosen
// handshake datagrams: the client's Handshake-level ones (its Finished)
// the first 4 times, the server's first 3 Handshake-level flights, and
// every Application datagram from the server that is not an answer the
// client needs until the client's connect got through (the server's
// ticket: the first Application datagram it sends). The dial must still
// succeed, calls complete, and a second dial (no ticket was stored)
// makes a full handshake and succeeds too.
func TestReviewTLSSelectiveHandshakeLoss(t *testing.T) {
	pki := newTestPKI(t)
	sep := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()))
	relay := newFaultRelay(t, sep.Addr(), 1)
	clientHS, serverHS, serverApp := 0, 0, 0
	relay.mu.Lock()
	relay.drop = func(dir int, b []byte) bool {
		if len(b) < 2 || b[0] != 0xE9 {
			return false
		}
		switch lvl := b[1] & 3; {
		case dir == 0 && lvl == 1:
			clientHS++
			return clientHS <= 4
		case dir == 1 && lvl == 1:
			serverHS++
			return serverHS <= 3
		case dir == 1 && lvl == 2:
			serverApp++
			return serverApp == 1 // the ticket goes first
		}
		return false
	}
	relay.mu.Unlock()
	cfg := pki.clientTLS()
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	cep := listenT(t, nil, "127.0.0.1:0", erpc.WithTLS(cfg))
	for round := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		start := time.Now()
		s, err := cep.Dial(ctx, relay.addr())
		if err != nil {
			cancel()
			t.Fatalf("round %d: dial: %v (dropped %d)", round, err, relay.dropCount())
		}
		if _, err := s.Call(ctx, "Echo", []byte("x"), nil); err != nil {
			t.Fatalf("round %d: call: %v", round, err)
		}
		t.Logf("round %d: up in %v, resumed %v; relay dropped %d so far", round, time.Since(start).Round(time.Millisecond), s.PeerAuth().TLS.DidResume, relay.dropCount())
		s.Close()
		cancel()
	}
	relay.mu.Lock()
	defer relay.mu.Unlock()
	if relay.dropped < 8 {
		t.Fatalf("only %d datagrams dropped: the attack did not happen", relay.dropped)
	}
}

func (r *faultRelay) dropCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}
