package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/erpc-go/erpc"
)

// tlsFlags are kvserver's TLS flags, named as erpc's command (cmd/erpc)
// and grpcurl name them: -cert (a PEM certificate chain) and -key (its
// private key) make the server TLS 1.3 (erpc.WithTLS); -cacert gives the
// demo's client the CA certificates to verify it with. -insecure keeps
// its meaning of plaintext beyond loopback (erpc.Insecure), so it goes
// with no TLS flag.
type tlsFlags struct {
	cert, key string
	cacert    string
}

// security says what the server's sessions are.
func (f tlsFlags) security() string {
	if f.cert != "" {
		return "TLS"
	}
	return "plaintext"
}

// serverOptions are the Listen options the flags make: WithTLS with
// -cert and -key, Insecure with -insecure (plaintext), or none.
func (f tlsFlags) serverOptions(plaintext bool) ([]erpc.Option, error) {
	switch {
	case f.cert == "" && f.key == "":
		if plaintext {
			return []erpc.Option{erpc.Insecure()}, nil
		}
		return nil, nil
	case f.cert == "" || f.key == "":
		return nil, errors.New("-cert and -key go together: -cert FILE the server's certificate (PEM), -key FILE its private key (PEM)")
	case plaintext:
		return nil, errors.New("-insecure serves plaintext, -cert and -key serve TLS: not both")
	}
	certPEM, err := readPEM("-cert", f.cert)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(f.key)
	if err != nil {
		return nil, fmt.Errorf("-key: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("-cert %s -key %s: %w", f.cert, f.key, err)
	}
	return []erpc.Option{erpc.WithTLS(&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13})}, nil
}

// demoClientOptions are the Dial options of the demo's client: TLS that
// verifies the server with -cacert's CAs when the server has -cert.
func (f tlsFlags) demoClientOptions(demo bool) ([]erpc.Option, error) {
	switch {
	case f.cacert != "" && !demo:
		return nil, errors.New("-cacert is for the -demo's client; kvserver's own clients trust its CA themselves (erpc.WithTLS with RootCAs)")
	case !demo || (f.cert == "" && f.cacert == ""):
		return nil, nil
	case f.cert == "":
		return nil, errors.New("-cacert: the demo's server is plaintext without -cert FILE -key FILE")
	case f.cacert == "":
		return nil, errors.New("-demo with -cert and -key: give -cacert FILE, the PEM of the CA that signed the certificate, for the demo's client to verify the server with")
	}
	pemBytes, err := readPEM("-cacert", f.cacert)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("-cacert %s: its CERTIFICATE blocks do not parse as X.509 certificates", f.cacert)
	}
	return []erpc.Option{erpc.WithTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13})}, nil
}

// readPEM reads the file a flag names and checks it holds a PEM
// CERTIFICATE, so that a key given as a certificate, or a file that is not
// PEM, is named as such.
func readPEM(flagName, file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	var found []string
	for rest := b; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			return b, nil
		}
		found = append(found, block.Type)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s %s: no PEM data in it (want a -----BEGIN CERTIFICATE----- block)", flagName, file)
	}
	hint := ""
	if strings.Contains(strings.Join(found, " "), "PRIVATE KEY") {
		hint = " (a key: -cert and -cacert take certificates, -key the private key)"
	}
	return nil, fmt.Errorf("%s %s: no CERTIFICATE in it, only %s%s", flagName, file, strings.Join(found, ", "), hint)
}
