package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCert makes an ECDSA P-256 certificate for name, signed by parent
// (self-signed when parent is nil), and writes it and its key as PEM
// files in dir.
func writeCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: parent == nil,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return cert, key, certFile, keyFile
}

// TestSecurityFlagsBuildTLSConfig: -cacert's roots, -cert and -key's
// certificate, -insecure's skipped verification and -servername (or the
// target's host) make the TLS configuration; -plaintext makes none, and
// no flag leaves the choice to erpc's policy.
func TestSecurityFlagsBuildTLSConfig(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, caFile, _ := writeCert(t, dir, "ca.example", nil, nil)
	_, _, certFile, keyFile := writeCert(t, dir, "client.example", ca, caKey)

	f := tlsFlags{cacert: caFile, cert: certFile, key: keyFile}
	cfg, err := f.tlsConfig("udp://db.example:31850")
	if err != nil {
		t.Fatal(err)
	}
	want := x509.NewCertPool()
	want.AddCert(ca)
	if !cfg.RootCAs.Equal(want) || len(cfg.Certificates) != 1 || cfg.ServerName != "db.example" || cfg.InsecureSkipVerify || cfg.MinVersion != 0x0304 {
		t.Fatalf("config %+v: want the CA as roots, one certificate, server name db.example, verification, TLS 1.3", cfg)
	}
	for target, host := range map[string]string{"[::1]:5": "::1", "10.0.0.7:5": "10.0.0.7", "shm:///run/x.sock": ""} {
		if cfg, _ := (&tlsFlags{insecure: true}).tlsConfig(target); cfg.ServerName != host || !cfg.InsecureSkipVerify {
			t.Errorf("-insecure %s: server name %q (skip %v), want %q, skipped", target, cfg.ServerName, cfg.InsecureSkipVerify, host)
		}
	}
	if cfg, _ := (&tlsFlags{serverName: "other.example"}).tlsConfig("10.0.0.7:5"); cfg.ServerName != "other.example" || cfg.RootCAs != nil {
		t.Errorf("-servername: %q, roots %v; want other.example, the system's", cfg.ServerName, cfg.RootCAs)
	}
	for _, f := range []tlsFlags{{}, {plaintext: true}} {
		if opts, err := f.dialOptions("10.0.0.7:5"); err != nil || len(opts) != int(map[bool]int{false: 0, true: 1}[f.plaintext]) {
			t.Errorf("%+v: %d options, %v", f, len(opts), err)
		}
	}
}

// TestSecurityFlagsRefused: contradictory or incomplete flags are usage
// errors (exit 2) saying why, before anything is dialed; so is a target
// of another host with none of them, which names the flags that fix it;
// a -cacert that holds no certificate fails too.
func TestSecurityFlagsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	os.WriteFile(empty, []byte("not PEM"), 0o600)
	_, _, certFile, _ := writeCert(t, dir, "c.example", nil, nil)
	for _, tc := range []struct {
		args []string
		code int
		says []string
	}{
		{[]string{"192.0.2.1:31850", "health"}, exitUsage, []string{"192.0.2.1 is not a loopback address", "-plaintext", "-cacert FILE", "-insecure"}},
		{[]string{"udp://[2001:db8::1]:31850", "list"}, exitUsage, []string{"2001:db8::1 is not a loopback address", "-plaintext"}},
		{[]string{"-plaintext", "-insecure", "192.0.2.1:31850", "health"}, exitUsage, []string{"not both"}},
		{[]string{"-plaintext", "-cacert", empty, "127.0.0.1:9", "health"}, exitUsage, []string{"not both"}},
		{[]string{"-cert", certFile, "127.0.0.1:9", "health"}, exitUsage, []string{"-cert and -key go together"}},
		{[]string{"-cacert", empty, "127.0.0.1:9", "health"}, exitFailure, []string{"no PEM certificate"}},
		{[]string{"-cacert", filepath.Join(dir, "missing.pem"), "127.0.0.1:9", "health"}, exitFailure, []string{"-cacert"}},
	} {
		r := erpcCmd(t, "", tc.args...)
		for _, s := range tc.says {
			if r.code != tc.code || !strings.Contains(r.stderr, s) {
				t.Errorf("erpc %s: %v; want exit %d saying %q", strings.Join(tc.args, " "), r, tc.code, s)
			}
		}
	}
}

// TestSecurityFlagPlaintextLoopback: -plaintext, and no flag at all, reach
// a plaintext server on loopback.
func TestSecurityFlagPlaintextLoopback(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	expect(t, erpcCmd(t, "", "-plaintext", target, "health"), 0, "SERVING\n", "")
	expect(t, erpcCmd(t, "", target, "health"), 0, "SERVING\n", "")
}

// tlsDirEnv names a directory with localhost.pem and localhost.key: the
// test server then serves with TLS, presenting them.
const tlsDirEnv = "ERPC_CLI_TEST_TLS_DIR"

func testServerTLS(dir string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "localhost.pem"), filepath.Join(dir, "localhost.key"))
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}}, nil
}

// TestSecurityFlagsTLS: against a TLS server, -cacert with its CA
// verifies it by the target's address or by -servername, -insecure
// reaches it unverified; another CA, a wrong -servername and a client
// without TLS flags (plaintext, on loopback) each fail, saying why.
func TestSecurityFlagsTLS(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	ca, caKey, caFile, _ := writeCert(t, dir, "ca.example", nil, nil)
	writeCert(t, dir, "localhost", ca, caKey)
	_, _, otherCA, _ := writeCert(t, other, "other.example", nil, nil)
	t.Setenv(tlsDirEnv, dir)
	target := startServer(t, modeFull)
	expect(t, erpcCmd(t, "", "-cacert", caFile, target, "health"), 0, "SERVING\n", "")
	expect(t, erpcCmd(t, "", "-cacert", caFile, "-servername", "localhost", target, "health"), 0, "SERVING\n", "")
	expect(t, erpcCmd(t, "", "-insecure", target, "health"), 0, "SERVING\n", "")
	expect(t, erpcCmd(t, "", "-cacert", otherCA, target, "health"), exitFailure, "", "certificate signed by unknown authority")
	expect(t, erpcCmd(t, "", "-cacert", caFile, "-servername", "wrong.example", target, "health"), exitFailure, "", "wrong.example")
	r := erpcCmd(t, "", target, "health")
	if r.code == 0 || !strings.Contains(strings.ToLower(r.stderr), "tls") {
		t.Fatalf("a plaintext client of a TLS server: %v; want a failure naming TLS", r)
	}
}
