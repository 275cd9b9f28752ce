package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/examples/kv"
)

// pki is a throwaway CA, and a certificate it signed for 127.0.0.1, as
// PEM files.
type pki struct {
	ca                        *x509.Certificate
	caFile, certFile, keyFile string
}

// newPKI writes a CA named name and a server certificate it signed in
// dir.
func newPKI(t *testing.T, dir, name string) pki {
	t.Helper()
	ca, caKey := issue(t, dir, name, nil, nil)
	issue(t, dir, name+"-server", ca, caKey)
	return pki{ca: ca, caFile: filepath.Join(dir, name+".pem"),
		certFile: filepath.Join(dir, name+"-server.pem"), keyFile: filepath.Join(dir, name+"-server.key")}
}

// issue makes an ECDSA certificate for 127.0.0.1 (a CA, self-signed,
// when parent is nil) and writes name.pem and name.key.
func issue(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		tmpl.IPAddresses, tmpl.ExtKeyUsage = nil, nil
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(t, filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	return cert, key
}

func writeFile(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// lines hands each log line to the test.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	select {
	case l <- string(p):
	default:
	}
	return len(p), nil
}

var servingLine = regexp.MustCompile(`^kv: serving \d+ keys' worth at (\S+), (TLS|plaintext)\n$`)

// serveCmd runs kvserver with flags on a loopback ephemeral port until
// the test ends, and returns its target and what it says of its
// security.
func serveCmd(t *testing.T, flags ...string) (target, security string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logged, done, exited := make(lines, 1), make(chan error, 1), make(chan struct{})
	args := append([]string{"-addr", "127.0.0.1:0", "-keys", "1000"}, flags...)
	go func() {
		defer close(exited)
		done <- run(ctx, args, io.Discard, log.New(logged, "", 0))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Error("kvserver did not return within 10s of its context's end")
		}
	})
	select {
	case line := <-logged:
		m := servingLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("kvserver logged %q", line)
		}
		return m[1], m[2]
	case err := <-done:
		t.Fatalf("kvserver %q: %v", flags, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("kvserver %q: not serving within 10s", flags)
	}
	return "", ""
}

func testCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// errorSays fails the test unless err's text has each of wants.
func errorSays(t *testing.T, what string, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error; want one saying %q", what, wants)
		return
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %v\nwant it to say %q", what, err, w)
		}
	}
}

// TestTLSFlagsServe: kvserver -cert -key serves TLS: a client that
// trusts the CA sets and gets a key over a session its handshake proved
// TLS; a plaintext client and a client of another CA are refused.
func TestTLSFlagsServe(t *testing.T) {
	p, other := newPKI(t, t.TempDir(), "ca"), newPKI(t, t.TempDir(), "other")
	target, security := serveCmd(t, "-cert", p.certFile, "-key", p.keyFile)
	if security != "TLS" {
		t.Fatalf("kvserver -cert -key says it serves %s", security)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	s, err := erpc.Dial(testCtx(t), target, erpc.WithTLS(&tls.Config{RootCAs: roots}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.PeerAuth().TLS == nil {
		t.Fatal("the session is not TLS")
	}
	key, val := []byte("0123456789abcdef"), bytes.Repeat([]byte{7}, kv.MinValue)
	if err := kv.Set(testCtx(t), s, key, val); err != nil {
		t.Fatal(err)
	}
	if got, err := kv.Get(testCtx(t), s, key, nil); err != nil || !bytes.Equal(got, val) {
		t.Fatalf("Get: %v, %x", err, got)
	}

	_, err = erpc.Dial(testCtx(t), target)
	errorSays(t, "a plaintext client", err, "requires TLS")
	otherRoots := x509.NewCertPool()
	otherRoots.AddCert(other.ca)
	_, err = erpc.Dial(testCtx(t), target, erpc.WithTLS(&tls.Config{RootCAs: otherRoots}))
	errorSays(t, "a client of another CA", err, "certificate signed by unknown authority")
}

// TestTLSFlagsDemo: -demo with -cert, -key and -cacert runs its client
// over TLS (as the session's handshake proved); with another CA's
// -cacert it fails verifying the server.
func TestTLSFlagsDemo(t *testing.T) {
	dir := t.TempDir()
	p, other := newPKI(t, dir, "ca"), newPKI(t, dir, "other")
	var out strings.Builder
	args := []string{"-demo", "-keys", "1000", "-cert", p.certFile, "-key", p.keyFile}
	if err := run(testCtx(t), append(args, "-cacert", p.caFile), &out, log.New(io.Discard, "", 0)); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^kv over UDP loopback \(udp://127\.0\.0\.1:\d+, TLS\): 1000 keys`).MatchString(out.String()) {
		t.Fatalf("demo over TLS said %q", out.String())
	}
	err := run(testCtx(t), append(args, "-cacert", other.caFile), io.Discard, log.New(io.Discard, "", 0))
	errorSays(t, "demo with another CA's -cacert", err, "certificate signed by unknown authority")
}

// TestTLSFlagsWrongInputs: each wrong TLS flag a hurried user may type
// fails before serving, naming the flag and what is wrong.
func TestTLSFlagsWrongInputs(t *testing.T) {
	dir := t.TempDir()
	p, other := newPKI(t, dir, "ca"), newPKI(t, dir, "other")
	notPEM := filepath.Join(dir, "notes.txt")
	writeFile(t, notPEM, []byte("not a certificate\n"))
	missing := filepath.Join(dir, "missing.pem")
	cases := []struct {
		args  []string
		wants []string
	}{
		{[]string{"-cert", p.certFile}, []string{"-cert and -key go together"}},
		{[]string{"-key", p.keyFile}, []string{"-cert and -key go together"}},
		{[]string{"-cert", missing, "-key", p.keyFile}, []string{"-cert", missing, "no such file"}},
		{[]string{"-cert", p.certFile, "-key", missing}, []string{"-key", missing, "no such file"}},
		{[]string{"-cert", p.keyFile, "-key", p.certFile}, []string{"-cert " + p.keyFile, "no CERTIFICATE", "EC PRIVATE KEY", "-key the private key"}},
		{[]string{"-cert", notPEM, "-key", p.keyFile}, []string{"-cert " + notPEM, "no PEM data"}},
		{[]string{"-cert", p.certFile, "-key", other.keyFile}, []string{"-cert " + p.certFile + " -key " + other.keyFile, "private key does not match"}},
		{[]string{"-insecure", "-cert", p.certFile, "-key", p.keyFile}, []string{"-insecure", "not both"}},
		{[]string{"-cacert", p.caFile}, []string{"-cacert is for the -demo's client"}},
		{[]string{"-demo", "-cert", p.certFile, "-key", p.keyFile}, []string{"-demo with -cert and -key: give -cacert FILE"}},
		{[]string{"-demo", "-cacert", p.caFile}, []string{"-cacert", "plaintext without -cert"}},
		{[]string{"-demo", "-cert", p.certFile, "-key", p.keyFile, "-cacert", missing}, []string{"-cacert", missing, "no such file"}},
		{[]string{"-demo", "-cert", p.certFile, "-key", p.keyFile, "-cacert", p.keyFile}, []string{"-cacert " + p.keyFile, "no CERTIFICATE"}},
		{[]string{"-demo", "-cert", p.certFile, "-key", p.keyFile, "-cacert", notPEM}, []string{"-cacert " + notPEM, "no PEM data"}},
	}
	// A context already done: a kvserver whose flags pass returns at once
	// (without an error), rather than serving on.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range cases {
		var logged strings.Builder
		err := run(done, append([]string{"-addr", "127.0.0.1:0", "-keys", "1000"}, c.args...), io.Discard, log.New(&logged, "", 0))
		errorSays(t, strings.Join(c.args, " "), err, c.wants...)
		if logged.Len() != 0 {
			t.Errorf("%q logged %q: it served", c.args, logged.String())
		}
	}
}
