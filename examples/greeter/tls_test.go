package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// pki is a throwaway CA and a certificate it signed for localhost and
// 127.0.0.1, as PEM files.
type pki struct {
	caFile, certFile, keyFile string
}

// newPKI writes a CA named caName and a server certificate it signed in
// dir.
func newPKI(t *testing.T, dir, caName string) pki {
	t.Helper()
	ca, caKey := issue(t, dir, caName, nil, nil)
	issue(t, dir, caName+"-server", ca, caKey)
	return pki{
		caFile:   filepath.Join(dir, caName+".pem"),
		certFile: filepath.Join(dir, caName+"-server.pem"),
		keyFile:  filepath.Join(dir, caName+"-server.key"),
	}
}

// issue makes an ECDSA certificate for localhost and 127.0.0.1 (a CA
// when parent is nil, self-signed) and writes name.pem and name.key.
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
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		tmpl.DNSNames, tmpl.IPAddresses, tmpl.ExtKeyUsage = nil, nil, nil
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

// lines hands each write of serve's output to the test.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	select {
	case l <- string(p):
	default:
	}
	return len(p), nil
}

var serveLine = regexp.MustCompile(`^greeter\.v1\.Greeter: gRPC on tcp (\S+), erpc on (\S+), (TLS|plaintext)\n$`)

// serveCmd runs `greeter serve` with flags on loopback's ephemeral ports
// until the test ends, and returns its gRPC and erpc addresses and what
// it says of its security.
func serveCmd(t *testing.T, flags ...string) (grpcAddr, erpcAddr, security string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, done, exited := make(lines, 1), make(chan error, 1), make(chan struct{})
	args := append([]string{"serve", "-grpc", "127.0.0.1:0", "-erpc", "127.0.0.1:0"}, flags...)
	go func() {
		defer close(exited)
		done <- run(ctx, args, out)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Error("serve did not return within 10s of its context's end")
		}
	})
	select {
	case line := <-out:
		m := serveLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("serve said %q", line)
		}
		return m[1], m[2], m[3]
	case err := <-done:
		t.Fatalf("serve %q: %v", flags, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("serve %q: not serving within 10s", flags)
	}
	return "", "", ""
}

// helloCmd runs `greeter hello` with args, and returns its output.
func helloCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	err := run(ctx(t), append([]string{"hello", "-timeout", "5s"}, args...), &out)
	return out.String(), err
}

// errorSays fails the test unless err is an error whose text has each
// of wants.
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

// TestTLSFlagsServeAndHello: serve -cert -key serves TLS on both
// protocols, and hello -cacert (with or without -servername) greets over
// each; without -cacert, with another CA's certificate, or with a name
// the certificate does not have, hello fails, saying what to do or why.
func TestTLSFlagsServeAndHello(t *testing.T) {
	p, other := newPKI(t, t.TempDir(), "ca"), newPKI(t, t.TempDir(), "other")
	grpcAddr, erpcAddr, security := serveCmd(t, "-cert", p.certFile, "-key", p.keyFile)
	if security != "TLS" {
		t.Fatalf("serve -cert -key says it serves %s", security)
	}
	for proto, target := range map[string]string{"-grpc": grpcAddr, "-erpc": erpcAddr} {
		for _, extra := range [][]string{nil, {"-servername", "localhost"}} {
			args := append(append([]string{"-cacert", p.caFile}, extra...), proto, target, "Ada")
			out, err := helloCmd(t, args...)
			if err != nil || !strings.HasPrefix(out, "Hello, Ada!\ngreeted \"Ada\"") {
				t.Errorf("hello %q: %v, %q", args, err, out)
			}
		}
		_, err := helloCmd(t, proto, target, "Ada")
		errorSays(t, "hello "+proto+" without -cacert", err, "requires TLS", "-cacert FILE")
		_, err = helloCmd(t, "-cacert", other.caFile, proto, target, "Ada")
		errorSays(t, "hello "+proto+" -cacert of another CA", err, "certificate signed by unknown authority", "not signed by a CA in -cacert")
		_, err = helloCmd(t, "-cacert", p.caFile, "-servername", "wrong.example", proto, target, "Ada")
		errorSays(t, "hello "+proto+" -servername wrong.example", err, "wrong.example")
	}
}

// TestTLSFlagsClientOfPlaintextServer: hello -cacert against a plaintext
// serve fails over each protocol, saying the server does not speak TLS
// and what to do.
func TestTLSFlagsClientOfPlaintextServer(t *testing.T) {
	p := newPKI(t, t.TempDir(), "ca")
	grpcAddr, erpcAddr, security := serveCmd(t)
	if security != "plaintext" {
		t.Fatalf("serve without -cert says it serves %s", security)
	}
	for proto, target := range map[string]string{"-grpc": grpcAddr, "-erpc": erpcAddr} {
		_, err := helloCmd(t, "-cacert", p.caFile, proto, target, "Ada")
		errorSays(t, "hello "+proto+" -cacert of a plaintext server", err, "does not speak TLS", "without -cacert", "-cert FILE -key FILE")
		if out, err := helloCmd(t, proto, target, "Ada"); err != nil || !strings.HasPrefix(out, "Hello, Ada!") {
			t.Errorf("hello %s without TLS flags: %v, %q", proto, err, out)
		}
	}
}

// TestTLSFlagsWrongInputs: each wrong TLS flag a hurried user may type
// fails before serving or dialing, naming the flag and what is wrong.
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
		{[]string{"serve", "-cert", p.certFile}, []string{"-cert and -key go together"}},
		{[]string{"serve", "-key", p.keyFile}, []string{"-cert and -key go together"}},
		{[]string{"serve", "-cert", missing, "-key", p.keyFile}, []string{"-cert", missing, "no such file"}},
		{[]string{"serve", "-cert", p.certFile, "-key", missing}, []string{"-key", missing, "no such file"}},
		{[]string{"serve", "-cert", p.keyFile, "-key", p.certFile}, []string{"-cert " + p.keyFile, "no CERTIFICATE", "EC PRIVATE KEY", "-key the private key"}},
		{[]string{"serve", "-cert", notPEM, "-key", p.keyFile}, []string{"-cert " + notPEM, "no PEM data"}},
		{[]string{"serve", "-cert", p.certFile, "-key", other.keyFile}, []string{"-cert " + p.certFile + " -key " + other.keyFile, "private key does not match"}},
		{[]string{"serve", "-insecure", "-cert", p.certFile, "-key", p.keyFile}, []string{"-insecure", "not both"}},
		{[]string{"serve", "-cacert", p.caFile}, []string{"-cacert is hello's flag, not serve's"}},
		{[]string{"hello", "-cacert", missing, "-erpc", "127.0.0.1:9", "Ada"}, []string{"-cacert", missing, "no such file"}},
		{[]string{"hello", "-cacert", p.keyFile, "-grpc", "127.0.0.1:9", "Ada"}, []string{"-cacert " + p.keyFile, "no CERTIFICATE"}},
		{[]string{"hello", "-cacert", notPEM, "-erpc", "127.0.0.1:9", "Ada"}, []string{"-cacert " + notPEM, "no PEM data"}},
		{[]string{"hello", "-insecure", "-cacert", p.caFile, "-erpc", "127.0.0.1:9", "Ada"}, []string{"-insecure", "not both"}},
		{[]string{"hello", "-insecure", "-servername", "localhost", "-grpc", "127.0.0.1:9", "Ada"}, []string{"-insecure", "not both"}},
		{[]string{"hello", "-cert", p.certFile, "-grpc", "127.0.0.1:9", "Ada"}, []string{"-cert is serve's flag, not hello's"}},
	}
	// A context already done: a serve whose flags pass returns at once
	// (without an error), rather than serving on.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range cases {
		var out strings.Builder
		err := run(done, c.args, &out)
		errorSays(t, strings.Join(c.args, " "), err, c.wants...)
		if out.Len() != 0 {
			t.Errorf("%q wrote %q", c.args, out.String())
		}
	}
}

// TestTLSFlagsCorruptPEM: -cert and -cacert files cut short or with bytes
// changed at random (seeded) are refused with an error naming the flag, or,
// where the change left them valid, accepted: never a panic, never an
// error that does not say which flag.
func TestTLSFlagsCorruptPEM(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir, "ca")
	certPEM, err := os.ReadFile(p.certFile)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(p.caFile)
	if err != nil {
		t.Fatal(err)
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	corrupt := func(b []byte) []byte {
		b = bytes.Clone(b)
		if rng.IntN(2) == 0 {
			return b[:rng.IntN(len(b))]
		}
		for range 1 + rng.IntN(4) {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		return b
	}
	bad := filepath.Join(dir, "bad.pem")
	refused := map[string]int{}
	const rounds = 200
	for range rounds {
		writeFile(t, bad, corrupt(certPEM))
		if _, _, err := (tlsFlags{cert: bad, key: p.keyFile}).serverSecurity(false); err != nil {
			refused["-cert"]++
			errorSays(t, "a corrupt -cert", err, "-cert")
		}
		writeFile(t, bad, corrupt(caPEM))
		if _, err := (tlsFlags{cacert: bad}).clientTLS(false); err != nil {
			refused["-cacert"]++
			errorSays(t, "a corrupt -cacert", err, "-cacert")
		}
	}
	// Most changes break a file: the errors above were met, not assumed.
	for _, f := range []string{"-cert", "-cacert"} {
		if refused[f] < rounds/2 {
			t.Errorf("%s: %d of %d corrupt files refused", f, refused[f], rounds)
		}
	}
	t.Logf("refused of %d: %v", rounds, refused)
}
