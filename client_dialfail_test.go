package erpc_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// The failures of a Client's dials: a target that can never work is
// refused at once with the dial's own code, a transient failure stays
// Unavailable, and every failure says why (an outside tester's findings).

// callClient makes one call on c, bounded well past the failure timeout,
// and says how long it took. The tests tell "at once" from "after the
// failure timeout" by the code (that one is Unavailable) and from "at
// the call's deadline" by waitedOut: never by a tight time, which a
// loaded host stretches (a TLS handshake under -race took 1.5 s).
func callClient(c *erpc.Client) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t0 := time.Now()
	_, err := c.Call(ctx, "Echo", []byte("x"), nil)
	return time.Since(t0), err
}

// waitedOut: a call took most of callClient's deadline.
func waitedOut(took time.Duration) bool { return took > 4*time.Second }

// TestClientMalformedTargetRefusedAtNewClient: a plain target that
// erpc.Dial refuses as malformed (InvalidArgument) is refused by
// NewClient too, at once, naming the target, rather than taken and then
// failing every call after the failure timeout with Unavailable.
func TestClientMalformedTargetRefusedAtNewClient(t *testing.T) {
	checkLeaks(t)
	for _, target := range []string{"localhost:", "localhost", ":31850", "udp://", "localhost:0",
		"localhost:99999", "udp://localhost", "static:///localhost:0"} {
		c, err := erpc.NewClient(target)
		if err == nil {
			took, cerr := callClient(c)
			c.Close()
			t.Errorf("NewClient(%q) took the target; a call then failed after %v with %v", target, took.Round(time.Millisecond), cerr)
			continue
		}
		if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), target) {
			t.Errorf("NewClient(%q): %v (code %v), want InvalidArgument naming the target", target, err, erpc.CodeOf(err))
		}
	}
}

// nonLoopbackIPv4 is an address of this host other hosts could reach, or
// skips the test.
func nonLoopbackIPv4(t *testing.T) string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address")
	return ""
}

// TestClientPlaintextPolicyFailsAtOnce: a Client without WithTLS or
// Insecure over an address of another host is refused as erpc.Dial
// refuses it (InvalidArgument, naming WithTLS and Insecure): by NewClient
// for a literal address, and for a name at the first call, at once, not
// after the failure timeout with Unavailable.
func TestClientPlaintextPolicyFailsAtOnce(t *testing.T) {
	checkLeaks(t)
	ip := nonLoopbackIPv4(t)
	srv := serverWith(t, "Echo", echoHandler)
	ep := listenT(t, srv, "0.0.0.0:0", erpc.Insecure())
	port := ep.Addr().Port()
	target := net.JoinHostPort(ip, strconv.Itoa(int(port)))
	if c, err := erpc.NewClient(target); err == nil {
		c.Close()
		t.Errorf("NewClient(%q) without WithTLS or Insecure took an address of another host", target)
	} else if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "erpc.Insecure()") {
		t.Errorf("NewClient(%q) without WithTLS or Insecure: %v, want the plaintext policy's InvalidArgument", target, err)
	}
	// A name with that address: the policy is known only once it resolves.
	c, err := erpc.NewClient("fleet-policy.test:"+strconv.Itoa(int(port)), erpc.WithResolver(&fakeResolver{addrs: []netip.Addr{netip.MustParseAddr(ip)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	took, err := callClient(c)
	if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "erpc.Insecure()") || waitedOut(took) {
		t.Errorf("a call of a Client over a name of another host's address, after %v: %v, want at once the plaintext policy's InvalidArgument",
			took.Round(time.Millisecond), err)
	}
}

// TestClientUntrustedServerIsUnauthenticated: a Client whose every
// replica fails its handshake (an untrusted certificate) fails a call with
// Unauthenticated and the handshake's reason, as erpc.Dial does, within
// about the time of a handshake, not after the failure timeout with
// Unavailable.
func TestClientUntrustedServerIsUnauthenticated(t *testing.T) {
	checkLeaks(t)
	pki := newTestPKI(t)
	srv := serverWith(t, "Echo", echoHandler)
	ep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()))
	port := strconv.Itoa(int(ep.Addr().Port()))
	for _, target := range []string{"127.0.0.1:" + port, "static:///127.0.0.1:" + port + ",localhost:" + port} {
		c, err := erpc.NewClient(target, erpc.WithTLS(&tls.Config{})) // the system's roots: not the test CA
		if err != nil {
			t.Fatal(err)
		}
		took, err := callClient(c)
		c.Close()
		if erpc.CodeOf(err) != erpc.Unauthenticated || !strings.Contains(err.Error(), "certificate") || waitedOut(took) {
			t.Errorf("NewClient(%q) to an untrusted server: a call after %v: %v (code %v), want at once Unauthenticated naming the certificate",
				target, took.Round(time.Millisecond), err, erpc.CodeOf(err))
		}
	}
}

// TestClientFirstFailureSaysWhy: a Client's first call to a server that
// is not there fails with Unavailable (a transient failure: the server
// may come) and, the first time already, the last dial's reason.
func TestClientFirstFailureSaysWhy(t *testing.T) {
	checkLeaks(t)
	for i := range 3 {
		l, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		target := l.LocalAddr().String()
		l.Close()
		c, err := erpc.NewClient(target, erpc.WithFailureTimeout(time.Duration(200+200*i)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		_, err = callClient(c)
		c.Close()
		if erpc.CodeOf(err) != erpc.Unavailable || !strings.Contains(err.Error(), "last dial") {
			t.Errorf("the first call to %s, where nothing listens: %v (code %v), want Unavailable with the last dial's reason",
				target, err, erpc.CodeOf(err))
		}
	}
}

// TestNewClientTCPTargetSaysWhatToDo: a Client takes UDP, mem:// and
// shm:// replicas; a tcp://, http://, https:// or upper-case UDP:// target
// is refused with what to write instead, not with advice ("tcp:///name")
// that fails next with "no resolver".
func TestNewClientTCPTargetSaysWhatToDo(t *testing.T) {
	checkLeaks(t)
	for _, c := range []struct{ target, want string }{
		{"tcp://127.0.0.1:31850", `erpc.Dial(ctx, "tcp://127.0.0.1:31850")`},
		{"tcp:///127.0.0.1:31850", `erpc.Dial(ctx, "tcp://127.0.0.1:31850")`},
		{"http://localhost:31850", "not HTTP"},
		{"https://localhost:31850/x", "not HTTP"},
		{"UDP://localhost:31850", `"udp://localhost:31850"`},
		{"foo://bar:1", "no resolver"},
	} {
		cl, err := erpc.NewClient(c.target)
		if err == nil {
			cl.Close()
			t.Errorf("NewClient(%q) took it", c.target)
			continue
		}
		if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), ":///name") {
			t.Errorf("NewClient(%q): %v\n  want InvalidArgument saying %s", c.target, err, c.want)
		}
	}
}
