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
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// uriLeaf issues a certificate of p's CA for name (and 127.0.0.1) with
// the given URI SANs.
func (p *testPKI) uriLeaf(name string, usage x509.ExtKeyUsage, uris ...string) tls.Certificate {
	t := p.testing
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	var us []*url.URL
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		us = append(us, pu)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{name}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, URIs: us,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestReviewTLSPeerAuthSPIFFE: promise (PeerAuth): the SPIFFE ID comes
// only from a verified leaf with exactly one spiffe:// URI SAN, and the
// TLS state carries the verified chain. Cases, each seen by a server
// interceptor (PeerAuthFromContext) and on the client (Session.PeerAuth):
// a verified mutual-TLS client with one SPIFFE URI (its ID, also on a
// resumed second session); an unverified client certificate
// (RequireAnyClientCert: no ID); a leaf with two URIs (no ID); and a
// client with InsecureSkipVerify against a SPIFFE server (no ID, no
// verified chain).
func TestReviewTLSPeerAuthSPIFFE(t *testing.T) {
	pki := newTestPKI(t)
	const id = "spiffe://example.org/ns/a/sa/client"
	const sid = "spiffe://example.org/ns/a/sa/server"
	one := pki.uriLeaf("client", x509.ExtKeyUsageClientAuth, id)
	two := pki.uriLeaf("client", x509.ExtKeyUsageClientAuth, id, "https://example.org/x")
	srvCert := pki.uriLeaf("localhost", x509.ExtKeyUsageServerAuth, sid)

	var mu sync.Mutex
	var seen []erpc.PeerAuth
	icpt := func(ctx context.Context, req any, info *erpc.UnaryServerInfo, next erpc.UnaryHandler) (any, error) {
		a, ok := erpc.PeerAuthFromContext(ctx)
		if !ok {
			t.Errorf("PeerAuthFromContext in an interceptor: not a handler's context")
		}
		mu.Lock()
		seen = append(seen, a)
		mu.Unlock()
		return next(ctx, req)
	}
	serve := func(auth tls.ClientAuthType) *erpc.Endpoint {
		srv := erpc.NewServer(erpc.ChainUnaryInterceptor(icpt))
		must(t, srv.Handle("Echo", echoHandler))
		cfg := &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientAuth: auth, ClientCAs: pki.pool}
		return listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(cfg))
	}
	call := func(ep *erpc.Endpoint, cfg *tls.Config) (erpc.PeerAuth, erpc.PeerAuth) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := erpc.Dial(ctx, ep.Target(), erpc.WithTLS(cfg))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		mu.Lock()
		seen = nil
		mu.Unlock()
		if _, err := s.Call(ctx, "Echo", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 1 {
			t.Fatalf("the interceptor ran %d times", len(seen))
		}
		return seen[0], s.PeerAuth()
	}

	mutual := serve(tls.RequireAndVerifyClientCert)
	cache := tls.NewLRUClientSessionCache(4)
	c := pki.clientTLS()
	c.Certificates, c.ClientSessionCache = []tls.Certificate{one}, cache
	for round := range 2 {
		sa, ca := call(mutual, c)
		if sa.TLS == nil || sa.SPIFFEID != id || len(sa.TLS.VerifiedChains) == 0 {
			t.Errorf("round %d verified mTLS client: server sees SPIFFE %q, TLS %v", round, sa.SPIFFEID, sa.TLS != nil)
		} else if round == 1 && !sa.TLS.DidResume {
			t.Logf("round 1 did not resume (no ticket yet?)")
		}
		if ca.TLS == nil || ca.SPIFFEID != sid {
			t.Errorf("round %d: client sees server SPIFFE %q", round, ca.SPIFFEID)
		}
		if sa.TLS != nil {
			t.Logf("round %d: resumed %v, server-side SPIFFE %q, verified chains %d", round, sa.TLS.DidResume, sa.SPIFFEID, len(sa.TLS.VerifiedChains))
		}
	}

	c2 := pki.clientTLS()
	c2.Certificates = []tls.Certificate{two}
	if sa, _ := call(mutual, c2); sa.SPIFFEID != "" {
		t.Errorf("a leaf with two URI SANs gave SPIFFE ID %q", sa.SPIFFEID)
	}

	anyCert := serve(tls.RequireAnyClientCert)
	c3 := pki.clientTLS()
	c3.Certificates = []tls.Certificate{one}
	if sa, _ := call(anyCert, c3); sa.SPIFFEID != "" || sa.TLS == nil || len(sa.TLS.VerifiedChains) != 0 || len(sa.TLS.PeerCertificates) == 0 {
		t.Errorf("an unverified client certificate: SPIFFE %q, TLS %v", sa.SPIFFEID, sa.TLS != nil)
	}

	c4 := &tls.Config{InsecureSkipVerify: true}
	if _, ca := call(anyCert, func() *tls.Config { c4.Certificates = []tls.Certificate{one}; return c4 }()); ca.SPIFFEID != "" || ca.TLS == nil || len(ca.TLS.VerifiedChains) != 0 {
		t.Errorf("InsecureSkipVerify client: server SPIFFE %q, TLS %v", ca.SPIFFEID, ca.TLS != nil)
	}
}
