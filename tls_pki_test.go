package erpc_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"
)

// testPKI is a CA and the certificates a test's peers present.
type testPKI struct {
	ca      *x509.Certificate
	caKey   *ecdsa.PrivateKey
	pool    *x509.CertPool
	server  tls.Certificate // for "localhost" and 127.0.0.1
	client  tls.Certificate
	serial  int64
	testing *testing.T
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "erpc test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &testPKI{ca: ca, caKey: key, pool: x509.NewCertPool(), serial: 1, testing: t}
	p.pool.AddCert(ca)
	p.server = p.leaf("localhost", x509.ExtKeyUsageServerAuth)
	p.client = p.leaf("client", x509.ExtKeyUsageClientAuth)
	return p
}

// leaf issues a certificate for name (and 127.0.0.1) signed by the CA.
func (p *testPKI) leaf(name string, usage x509.ExtKeyUsage) tls.Certificate {
	t := p.testing
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{name}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// serverTLS is a server config presenting the server certificate.
func (p *testPKI) serverTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.server}}
}

// mutualServerTLS requires and verifies a client certificate of the CA.
func (p *testPKI) mutualServerTLS() *tls.Config {
	c := p.serverTLS()
	c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, p.pool
	return c
}

// clientTLS trusts the CA and expects "localhost".
func (p *testPKI) clientTLS() *tls.Config {
	return &tls.Config{RootCAs: p.pool, ServerName: "localhost"}
}
