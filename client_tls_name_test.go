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
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/resolver"
)

// namesOnlyLeaf issues a server certificate for the DNS names given and
// no IP address, as a fleet's servers usually have.
func (p *testPKI) namesOnlyLeaf(names ...string) tls.Certificate {
	t := p.testing
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: names,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestClientTLSVerifiesTargetHostName: a TLS Client whose config names no
// server verifies each replica's certificate against the target's host
// name, as erpc.Dial does, though the resolver gives it IP addresses
// ("dns:///localhost:p", a name resolved by the endpoint's resolver);
// a static list of names verifies each entry's name; a replica known by
// its IP only, from a target of IPs, is verified against that IP (and a
// certificate for names only fails it, Unauthenticated).
func TestClientTLSVerifiesTargetHostName(t *testing.T) {
	checkLeaks(t)
	pki := newTestPKI(t)
	cert := pki.namesOnlyLeaf("localhost", "db.fleet.test")
	srv := serverWith(t, "Echo", echoHandler)
	ep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	port := strconv.Itoa(int(ep.Addr().Port()))
	ctx := context.Background()

	s, err := erpc.Dial(ctx, "localhost:"+port, erpc.WithTLS(&tls.Config{RootCAs: pki.pool}))
	if err != nil {
		t.Fatalf("control: Dial(localhost:%s): %v", port, err)
	}
	s.Close()

	loopback := erpc.WithResolver(&fakeResolver{addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}})
	for _, target := range []string{"dns:///localhost:" + port, "static:///localhost:" + port,
		"db.fleet.test:" + port, "static:///db.fleet.test:" + port + ",localhost:" + port} {
		c, err := erpc.NewClient(target, erpc.WithTLS(&tls.Config{RootCAs: pki.pool}), loopback)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 { // over each replica of a static list, in time
			if _, err := callClient(c); err != nil {
				t.Errorf("NewClient(%q, WithTLS(RootCAs only)), call %d, against a certificate for localhost and db.fleet.test: %v", target, i, err)
				break
			}
		}
		c.Close()
	}

	// Known by IP alone: the IP is the name, which this certificate lacks.
	c, err := erpc.NewClient("static:///127.0.0.1:"+port, erpc.WithTLS(&tls.Config{RootCAs: pki.pool}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := callClient(c); erpc.CodeOf(err) != erpc.Unauthenticated {
		t.Errorf("a replica known by its IP only, against a certificate for names only: %v, want Unauthenticated", err)
	}
}

// TestClientTLSNameFollowsSRVTarget: the resolver first gives 127.0.0.1:p
// with SRV target old.fleet.test, then the same address with SRV target
// db.fleet.test, the name the server's certificate has. The replica's
// dials must then verify db.fleet.test: a call succeeds.
func TestClientTLSNameFollowsSRVTarget(t *testing.T) {
	pki := newTestPKI(t)
	cert := pki.namesOnlyLeaf("db.fleet.test")
	srv := serverWith(t, "Echo", echoHandler)
	ep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	addr := "127.0.0.1:" + strconv.Itoa(int(ep.Addr().Port()))
	name := newFleetName()
	srvTarget := func(target string) resolver.Address {
		return resolver.Address{Addr: addr, Attrs: map[string]string{"srv_target": target}}
	}
	testResolver.setAddrs(name, srvTarget("old.fleet.test."))
	c, err := erpc.NewClient("fleettest:///"+name, erpc.WithTLS(&tls.Config{RootCAs: pki.pool}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := callClient(c); erpc.CodeOf(err) != erpc.Unauthenticated {
		t.Fatalf("control: SRV target old.fleet.test, a certificate for db.fleet.test only: %v, want Unauthenticated", err)
	}
	testResolver.setAddrs(name, srvTarget("db.fleet.test."))
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = callClient(c)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the resolver gave the replica SRV target db.fleet.test (its certificate's name): %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
