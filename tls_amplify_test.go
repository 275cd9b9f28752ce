package erpc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestTLSLongChainUnderAmplificationLimit: a server whose first flight is
// many times the client's padded Initial (a leaf with 300 long names)
// sends it within the 3x budget of an address not yet validated, the
// rest as the client's copies raise the budget, and the handshake still
// completes (the part held back goes first, not the flight's start
// again). The server's counters show the flight was bigger than one
// budget's worth.
func TestTLSLongChainUnderAmplificationLimit(t *testing.T) {
	pki := newTestPKI(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"localhost"}
	for i := range 300 {
		names = append(names, fmt.Sprintf("replica-%03d.a-rather-long-service-name.internal.example.org", i))
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(77), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: names,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, pki.ca, &key.PublicKey, pki.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(der) < 4*1200 {
		t.Fatalf("the leaf is %d bytes: not larger than the budget, the test would not attack the limit", len(der))
	}
	chain := tls.Certificate{Certificate: [][]byte{der, pki.ca.Raw}, PrivateKey: key}
	sep := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0", erpc.WithTLS(&tls.Config{Certificates: []tls.Certificate{chain}}))
	cep := listenT(t, nil, "127.0.0.1:0", erpc.WithTLS(pki.clientTLS()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := cep.Dial(ctx, sep.Addr().String())
	if err != nil {
		t.Fatalf("dial with a %d-byte leaf: %v", len(der), err)
	}
	defer s.Close()
	if _, err := s.Call(ctx, "Echo", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
}
