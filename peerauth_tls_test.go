package erpc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// svid issues an X.509-SVID of the PKI's CA: a certificate whose one URI
// SAN is the SPIFFE ID id, also valid for "localhost" and 127.0.0.1.
func svid(t *testing.T, p *testPKI, id string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	u, err := url.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: "svid"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, URIs: []*url.URL{u},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestPeerAuthTLSServerIdentity: over TLS, the client's session carries
// the server's identity as the handshake verified it: TLS 1.3, the
// verified chain (the server's SVID, then the CA) and the SPIFFE ID of
// its one URI SAN; no kernel credentials over UDP.
func TestPeerAuthTLSServerIdentity(t *testing.T) {
	pki := newTestPKI(t)
	srvCfg := pki.mutualServerTLS()
	srvCfg.Certificates = []tls.Certificate{svid(t, pki, "spiffe://example.org/svc", x509.ExtKeyUsageServerAuth)}
	ep := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0", erpc.WithTLS(srvCfg))
	cliCfg := pki.clientTLS()
	cliCfg.Certificates = []tls.Certificate{svid(t, pki, "spiffe://example.org/client", x509.ExtKeyUsageClientAuth)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target(), erpc.WithTLS(cliCfg))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Call(ctx, "Echo", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	a := s.PeerAuth()
	switch {
	case a.TLS == nil:
		t.Fatal("no TLS state on a TLS session")
	case a.TLS.Version != tls.VersionTLS13 || !a.TLS.HandshakeComplete:
		t.Errorf("version %x, handshake complete %v; want TLS 1.3, complete", a.TLS.Version, a.TLS.HandshakeComplete)
	case len(a.TLS.VerifiedChains) == 0 || len(a.TLS.VerifiedChains[0]) != 2 || !a.TLS.VerifiedChains[0][1].Equal(pki.ca):
		t.Errorf("verified chains %v; want the server's SVID, then the CA", a.TLS.VerifiedChains)
	case a.SPIFFEID != "spiffe://example.org/svc":
		t.Errorf("SPIFFE ID %q, want spiffe://example.org/svc", a.SPIFFEID)
	case a.Local != nil:
		t.Errorf("kernel credentials %+v over UDP", a.Local)
	}
}

// TestPeerAuthTLSHandlerSeesClientIdentity: a handler of a mutual-TLS
// server sees the client's verified chain and SPIFFE ID.
func TestPeerAuthTLSHandlerSeesClientIdentity(t *testing.T) {
	pki := newTestPKI(t)
	var seen atomic.Pointer[erpc.PeerAuth]
	srv := erpc.NewServer()
	srv.Handle("Who", func(ctx context.Context, req []byte) ([]byte, error) {
		if a, ok := erpc.PeerAuthFromContext(ctx); ok {
			seen.Store(&a)
		}
		return req, nil
	})
	ep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(pki.mutualServerTLS()))
	cliCfg := pki.clientTLS()
	cliCfg.Certificates = []tls.Certificate{svid(t, pki, "spiffe://example.org/client", x509.ExtKeyUsageClientAuth)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target(), erpc.WithTLS(cliCfg))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Call(ctx, "Who", nil, nil); err != nil {
		t.Fatal(err)
	}
	a := seen.Load()
	if a == nil || a.TLS == nil || len(a.TLS.VerifiedChains) == 0 || a.SPIFFEID != "spiffe://example.org/client" {
		t.Fatalf("the handler saw %+v; want the client's verified chain and spiffe://example.org/client", a)
	}
}
