package erpc_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/rpctest"
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

// TestTLSConformance runs the RPC conformance suite (echo of random
// sizes up to 8 MiB, many sessions, concurrent calls, idle sessions,
// close semantics) with every endpoint speaking TLS over UDP.
func TestTLSConformance(t *testing.T) {
	rpctest.RunRPC(t, tlsNet{udpNet{}, newTestPKI(t)})
}

// TestTLSMutualIdentity: under RequireAndVerifyClientCert the server's
// association holds the client's verified certificate, both sides
// negotiated erpc's ALPN, and a tls.Config naming other protocols only
// is refused at Listen.
func TestTLSMutualIdentity(t *testing.T) {
	pki := newTestPKI(t)
	srv := serverWith(t, "Echo", echoHandler)
	sep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(pki.mutualServerTLS()))
	cfg := pki.clientTLS()
	cfg.Certificates = []tls.Certificate{pki.client}
	cfg.NextProtos = []string{"h2", "erpc/1"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, sep.Target(), erpc.WithTLS(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Call(ctx, "Echo", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	states := erpc.TLSStates(sep)
	if len(states) != 1 {
		t.Fatalf("%d established associations on the server, want 1", len(states))
	}
	st := states[0]
	if st.NegotiatedProtocol != "erpc/1" || st.Version != tls.VersionTLS13 ||
		len(st.VerifiedChains) == 0 || st.VerifiedChains[0][0].Subject.CommonName != "client" {
		t.Fatalf("server's view: ALPN %q, version %x, %d verified chains", st.NegotiatedProtocol, st.Version, len(st.VerifiedChains))
	}
	_, err = erpc.Listen("127.0.0.1:0", erpc.WithTLS(&tls.Config{NextProtos: []string{"h2"}}))
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.InvalidArgument || !strings.Contains(e.Msg, "erpc/1") {
		t.Fatalf("Listen with NextProtos [h2]: %v, want InvalidArgument naming erpc/1", err)
	}
}

// TestTLSHandshakeOffLoop: a server whose certificate check blocks (a
// VerifyPeerCertificate callback that waits, as one that looks a
// revocation list up may) keeps serving its other sessions meanwhile:
// the handshake's work runs off the event loop. With the handshake on
// the loop these calls would wait for the callback, which waits for
// them.
func TestTLSHandshakeOffLoop(t *testing.T) {
	pki := newTestPKI(t)
	var block atomic.Bool
	entered, release := make(chan struct{}, 1), make(chan struct{})
	scfg := pki.mutualServerTLS()
	scfg.VerifyPeerCertificate = func([][]byte, [][]*x509.Certificate) error {
		if block.Load() {
			entered <- struct{}{}
			<-release
		}
		return nil
	}
	srv := serverWith(t, "Echo", echoHandler)
	sep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(scfg))
	ccfg := pki.clientTLS()
	ccfg.Certificates = []tls.Certificate{pki.client}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first, err := erpc.Dial(ctx, sep.Target(), erpc.WithTLS(ccfg))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	block.Store(true)
	second := make(chan error, 1)
	go func() {
		s, err := erpc.Dial(ctx, sep.Target(), erpc.WithTLS(ccfg))
		if err == nil {
			s.Close()
		}
		second <- err
	}()
	<-entered // the second handshake is held in the server's callback
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	for i := range 100 {
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := first.Call(cctx, "Echo", []byte{byte(i)}, nil)
		ccancel()
		if err != nil {
			unblock()
			t.Fatalf("call %d while a handshake's callback blocks: %v", i, err)
		}
	}
	unblock()
	if err := <-second; err != nil {
		t.Fatalf("the held handshake: %v", err)
	}
}

// TestTLSAssociationsForgotten: the associations of closed sessions are
// forgotten on both ends once they have lingered (their last packets
// sealed), as traffic on the endpoint drives the sweep: a client that
// opens and closes sessions holds no more than a live one's worth.
func TestTLSAssociationsForgotten(t *testing.T) {
	pki := newTestPKI(t)
	fto := erpc.WithFailureTimeout(100 * time.Millisecond)
	sep := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()), fto)
	cep := listenT(t, nil, "127.0.0.1:0", erpc.WithTLS(pki.clientTLS()), fto)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 10 {
		s, err := cep.Dial(ctx, sep.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Call(ctx, "Echo", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if n := erpc.TLSAssocs(sep); n < 2 {
		t.Fatalf("server keeps %d associations right after the closes: the test saw no linger", n)
	}
	live, err := cep.Dial(ctx, sep.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	waitFor(t, "closed sessions' associations to be forgotten", func() bool {
		if _, err := live.Call(ctx, "Echo", []byte("y"), nil); err != nil {
			t.Fatal(err)
		}
		return erpc.TLSAssocs(sep) == 1 && erpc.TLSAssocs(cep) == 1
	})
}

// TestTLSResumption: a client whose tls.Config has a ClientSessionCache
// resumes its next session with the ticket the server sent after the
// first handshake (no certificate exchanged again), and calls work on
// the resumed session.
func TestTLSResumption(t *testing.T) {
	pki := newTestPKI(t)
	sep := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()))
	cfg := pki.clientTLS()
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(8)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var resumed []bool
	for range 2 {
		s, err := erpc.Dial(ctx, sep.Target(), erpc.WithTLS(cfg))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Call(ctx, "Echo", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		states := erpc.TLSStates(s.Endpoint())
		if len(states) != 1 {
			t.Fatalf("%d established associations on the client", len(states))
		}
		resumed = append(resumed, states[0].DidResume)
		s.Close()
	}
	if resumed[0] || !resumed[1] {
		t.Fatalf("resumed: first %v, second %v; want false, true", resumed[0], resumed[1])
	}
}
