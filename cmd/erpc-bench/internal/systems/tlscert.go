package systems

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"math/big"
	"net"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// The TLS systems (erpc-tls, grpc-tls, quic, quic-stream) each serve with
// a self-signed ECDSA P-256 certificate made when the server starts, for
// localhost, 127.0.0.1 and ::1. The client asks the server process for it
// (control command "cert") and trusts it alone, so every handshake
// verifies a real chain, as a deployment's would.

// tlsServerName is the name the clients verify.
const tlsServerName = "localhost"

// selfSigned makes a server's certificate.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: tlsServerName},
		DNSNames: []string{tlsServerName}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// serverTLS is a server's TLS 1.3 configuration with cert.
func serverTLS(cert tls.Certificate, alpn ...string) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13, NextProtos: alpn}
}

// clientTLS is the configuration of a client of srv, whose certificate
// it asks for and trusts alone.
func clientTLS(srv *proc.Server, alpn ...string) (*tls.Config, error) {
	reply, err := srv.Ctl("cert")
	if err != nil {
		return nil, fmt.Errorf("the server's certificate: %w", err)
	}
	der, err := base64.StdEncoding.DecodeString(reply)
	if err != nil {
		return nil, fmt.Errorf("the server's certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("the server's certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &tls.Config{RootCAs: roots, ServerName: tlsServerName, MinVersion: tls.VersionTLS13, NextProtos: alpn}, nil
}

// withCert is a TLS system's server: the system's, which also answers
// "cert" with its certificate (base64 DER).
type withCert struct {
	proc.Impl
	cert tls.Certificate
}

func (s withCert) Control(args []string) (string, error) {
	if args[0] == "cert" {
		return base64.StdEncoding.EncodeToString(s.cert.Certificate[0]), nil
	}
	return s.Impl.Control(args)
}
