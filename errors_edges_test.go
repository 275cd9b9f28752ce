package erpc_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// Errors an outside tester met using the library as a stranger: options
// out of the wire's range, a server TLS config with no certificate, a
// response over the limit, calls on a closed session, a name that does
// not resolve.

// TestOptionMaxMessageSizeBeyondWireRefused: the wire carries a message's
// size in 32 bits, so WithMaxMessageSize of 4 GiB or more is refused by
// Dial and Listen with InvalidArgument naming the option and its range,
// rather than accepted and then truncated (every call failing); the
// largest the wire carries works.
func TestOptionMaxMessageSizeBeyondWireRefused(t *testing.T) {
	checkLeaks(t)
	srv := serverWith(t, "Echo", echoHandler)
	ep := listenT(t, srv, "127.0.0.1:0")
	ctx := context.Background()
	for _, max := range []int{1 << 32, 1<<32 + 100, 1 << 40} {
		s, err := erpc.Dial(ctx, ep.Target(), erpc.WithMaxMessageSize(max))
		if err == nil {
			_, cerr := s.Call(ctx, "Echo", make([]byte, 200), nil)
			s.Close()
			t.Errorf("Dial with WithMaxMessageSize(%d) accepted; a 200-byte call then: %v", max, cerr)
			continue
		}
		if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "WithMaxMessageSize") ||
			!strings.Contains(err.Error(), strconv.Itoa(1<<32-1)) {
			t.Errorf("Dial with WithMaxMessageSize(%d): %v, want InvalidArgument naming the option and its range", max, err)
		}
		if l, err := srv.Listen("127.0.0.1:0", erpc.WithMaxMessageSize(max)); err == nil {
			l.Close()
			t.Errorf("Server.Listen with WithMaxMessageSize(%d) accepted", max)
		}
	}
	s, err := erpc.Dial(ctx, ep.Target(), erpc.WithMaxMessageSize(1<<32-1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Call(ctx, "Echo", make([]byte, 200), nil); err != nil {
		t.Errorf("WithMaxMessageSize(2^32-1), a 200-byte call: %v", err)
	}
}

// TestListenTLSWithoutCertificateRefused: a server's WithTLS config with
// no certificate (no Certificates, GetCertificate or GetConfigForClient)
// could complete no handshake: Server.Listen refuses it with
// InvalidArgument saying so. A client-only endpoint needs none.
func TestListenTLSWithoutCertificateRefused(t *testing.T) {
	checkLeaks(t)
	srv := serverWith(t, "Echo", echoHandler)
	ep, err := srv.Listen("127.0.0.1:0", erpc.WithTLS(&tls.Config{}))
	if err == nil {
		ep.Close()
		t.Fatal("Server.Listen took a TLS config with no certificate")
	}
	if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Server.Listen with a TLS config with no certificate: %v, want InvalidArgument naming the certificate", err)
	}
	pki := newTestPKI(t)
	for name, cfg := range map[string]*tls.Config{
		"GetCertificate": {GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &pki.server, nil }},
		"GetConfigForClient": {GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := pki.serverTLS()
			c.NextProtos = nil // completed with erpc's ALPN, as WithTLS's own config is
			return c, nil
		}},
	} {
		ep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(cfg))
		s, err := erpc.Dial(context.Background(), ep.Target(), erpc.WithTLS(pki.clientTLS()))
		if err != nil {
			t.Errorf("a server with %s only: %v", name, err)
			continue
		}
		s.Close()
	}
	cli, err := erpc.Listen("127.0.0.1:0", erpc.WithTLS(&tls.Config{}))
	if err != nil {
		t.Fatalf("a client-only endpoint with a TLS config with no certificate: %v", err)
	}
	cli.Close()
}

// TestListenTLSEmptyCertificateRefused: a Certificates list whose entry
// has no certificate bytes or no private key (tls.Certificate{}, a key
// left out) is refused by Server.Listen as no certificate is: every
// handshake that picked it would fail. A complete one is taken.
func TestListenTLSEmptyCertificateRefused(t *testing.T) {
	checkLeaks(t)
	pki := newTestPKI(t)
	srv := serverWith(t, "Echo", echoHandler)
	good := pki.server
	for name, certs := range map[string][]tls.Certificate{
		"empty":                 {{}},
		"no private key":        {{Certificate: good.Certificate}},
		"no certificate":        {{PrivateKey: good.PrivateKey}},
		"a good one, a bad one": {good, {}},
	} {
		ep, err := srv.Listen("127.0.0.1:0", erpc.WithTLS(&tls.Config{Certificates: certs}))
		if err == nil {
			ep.Close()
			t.Errorf("%s: Server.Listen took it", name)
			continue
		}
		if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: %v, want InvalidArgument naming the certificate", name, err)
		}
	}
	ep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(&tls.Config{Certificates: []tls.Certificate{good}}))
	s, err := erpc.Dial(context.Background(), ep.Target(), erpc.WithTLS(pki.clientTLS()))
	if err != nil {
		t.Fatalf("control: a complete certificate: %v", err)
	}
	s.Close()
}

// TestResponseOverLimitNamesBothSizes: a handler's response over the
// session's limit fails the call with Internal (the server failed, not
// the caller's arguments) naming the response's size and the limit.
func TestResponseOverLimitNamesBothSizes(t *testing.T) {
	checkLeaks(t)
	srv := serverWith(t, "Big", func(context.Context, []byte) ([]byte, error) { return make([]byte, 9<<20), nil })
	ep := listenT(t, srv, "127.0.0.1:0")
	for _, limit := range []int{8 << 20, 1 << 20} { // the server's default; a client's smaller one
		s, err := erpc.Dial(context.Background(), ep.Target(), erpc.WithMaxMessageSize(limit))
		if err != nil {
			t.Fatal(err)
		}
		_, err = call(t, s, "Big", nil)
		s.Close()
		if erpc.CodeOf(err) != erpc.Internal || !strings.Contains(err.Error(), strconv.Itoa(9<<20)) ||
			!strings.Contains(err.Error(), strconv.Itoa(limit)) {
			t.Errorf("a response of %d bytes over a limit of %d: %v (code %v), want Internal with both sizes", 9<<20, limit, err, erpc.CodeOf(err))
		}
	}
}

// TestCallAfterSessionCloseNamesMethodAndTarget: Call and Go on a session
// its caller closed fail with Unavailable, NotExecuted, naming the method
// and the target and saying the session was closed (as NewStream does).
func TestCallAfterSessionCloseNamesMethodAndTarget(t *testing.T) {
	checkLeaks(t)
	srv := serverWith(t, "Echo", echoHandler)
	ep := listenT(t, srv, "127.0.0.1:0")
	cli := listenT(t, nil, "127.0.0.1:0")
	ctx := context.Background()
	owned, err := erpc.Dial(ctx, ep.Target()) // closes its endpoint too
	if err != nil {
		t.Fatal(err)
	}
	shared, err := cli.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*erpc.Session{"erpc.Dial's": owned, "Endpoint.Dial's": shared} {
		s.Close()
		_, err := s.Call(ctx, "Echo", []byte("x"), nil)
		done := make(chan error, 1)
		s.Go("Echo", []byte("x"), nil, func(_ []byte, err error) { done <- err })
		for how, err := range map[string]error{"Call": err, "Go": <-done} {
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if erpc.CodeOf(err) != erpc.Unavailable || !erpc.NotExecuted(err) || !strings.Contains(msg, `"Echo"`) ||
				!strings.Contains(msg, ep.Target()) || !strings.Contains(msg, "session closed") {
				t.Errorf("%s on %s session after Close: %v, want Unavailable, NotExecuted, naming the method, the target and the close", how, name, err)
			}
		}
	}
}

// TestUnresolvableHostSameCode: a host name that does not exist fails
// Dial and Listen alike, with InvalidArgument (a name that does not exist
// is the caller's to fix; a resolver that cannot answer is Unavailable).
func TestUnresolvableHostSameCode(t *testing.T) {
	checkLeaks(t)
	const host = "no-such-host.invalid"
	_, derr := erpc.Dial(context.Background(), host+":31850")
	_, lerr := serverWith(t, "Echo", echoHandler).Listen(host + ":0")
	_, cerr := erpc.Listen(host + ":0")
	for what, err := range map[string]error{"Dial": derr, "Server.Listen": lerr, "Listen": cerr} {
		if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), host) {
			t.Errorf("%s of %s: %v (code %v), want InvalidArgument naming the host", what, host, err, erpc.CodeOf(err))
		}
	}
}

// TestSizeErrorsNameMethodAndTarget: a request over the session's limit
// (the client's, here) fails InvalidArgument naming both sizes, the
// method and the target; a handler's response over it fails Internal
// naming both sizes and the method.
func TestSizeErrorsNameMethodAndTarget(t *testing.T) {
	checkLeaks(t)
	srv := serverWith(t, "Big", func(context.Context, []byte) ([]byte, error) { return make([]byte, 2000), nil })
	ep := listenT(t, srv, "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target(), erpc.WithMaxMessageSize(1000))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Call(ctx, "Big", make([]byte, 1500), nil)
	if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(fmt.Sprint(err), "1500") || !strings.Contains(fmt.Sprint(err), "1000") ||
		!strings.Contains(fmt.Sprint(err), `"Big"`) || !strings.Contains(fmt.Sprint(err), ep.Target()) {
		t.Errorf("a request of 1500 bytes over 1000: %v (code %v), want InvalidArgument naming both sizes, \"Big\" and %s", err, erpc.CodeOf(err), ep.Target())
	}
	_, err = s.Call(ctx, "Big", []byte("x"), nil)
	if erpc.CodeOf(err) != erpc.Internal || !strings.Contains(fmt.Sprint(err), "2000") || !strings.Contains(fmt.Sprint(err), "1000") ||
		!strings.Contains(fmt.Sprint(err), `"Big"`) {
		t.Errorf("a response of 2000 bytes over 1000: %v (code %v), want Internal naming both sizes and \"Big\"", err, erpc.CodeOf(err))
	}
}
