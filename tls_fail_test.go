package erpc_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestTLSDialFailsFast attacks the handshake's failures: each case must
// fail Dial with Unauthenticated naming the reason, long before the
// failure timeout (10 s here, so a dial that waited for it fails the
// test), and never connect in the clear. The server side counts the
// failed handshake too (it was told, or found out itself).
func TestTLSDialFailsFast(t *testing.T) {
	pki := newTestPKI(t)
	other := newTestPKI(t) // a CA nobody here trusts
	cases := []struct {
		name       string
		server     erpc.Option
		client     erpc.Option
		want       string // in the error's message
		serverSees bool   // the server's endpoint counts a failed handshake
	}{
		{"untrusted server certificate", erpc.WithTLS(pki.serverTLS()),
			erpc.WithTLS(&tls.Config{RootCAs: other.pool, ServerName: "localhost"}), "certificate", true},
		{"wrong server name", erpc.WithTLS(pki.serverTLS()),
			erpc.WithTLS(&tls.Config{RootCAs: pki.pool, ServerName: "db.example"}), "db.example", true},
		{"missing client certificate", erpc.WithTLS(pki.mutualServerTLS()),
			erpc.WithTLS(pki.clientTLS()), "certificate", true},
		{"untrusted client certificate", erpc.WithTLS(pki.mutualServerTLS()),
			erpc.WithTLS(&tls.Config{RootCAs: pki.pool, ServerName: "localhost", Certificates: []tls.Certificate{other.client}}), "certificate", true},
		{"plaintext client, TLS server", erpc.WithTLS(pki.serverTLS()), erpc.Insecure(), "requires TLS", false},
		{"TLS client, plaintext server", erpc.Insecure(), erpc.WithTLS(pki.clientTLS()), "does not speak TLS", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := serverWith(t, "Echo", echoHandler)
			sep := listenT(t, srv, "127.0.0.1:0", c.server)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			s, err := erpc.Dial(ctx, sep.Target(), c.client, erpc.WithFailureTimeout(10*time.Second))
			took := time.Since(start)
			if err == nil {
				s.Close()
				t.Fatal("dial succeeded")
			}
			var e *erpc.Error
			if !errors.As(err, &e) || e.Code != erpc.Unauthenticated || !strings.Contains(e.Msg, c.want) {
				t.Fatalf("got %v, want Unauthenticated naming %q", err, c.want)
			}
			if took > 5*time.Second {
				t.Fatalf("took %v: waited for a timeout instead of failing on the alert", took)
			}
			if c.serverSees {
				waitFor(t, "the server to count the failed handshake", func() bool { return sep.Stats().TLSHandshakeFailures > 0 })
			}
			if st := sep.Stats(); st.ServerSessions != 0 {
				t.Fatalf("the server has %d sessions after a failed handshake", st.ServerSessions)
			}
		})
	}
}

