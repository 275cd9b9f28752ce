package erpc_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

func reviewHasIPv6(t *testing.T) {
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback")
	}
	l.Close()
}

// TestReviewTCPFamilies: doc.go says "An endpoint listening on "[::]",
// "0.0.0.0" or ":0" is dual-stack: it serves, and dials, both families",
// with no transport excepted; tcp:// names are also looked up
// (localhost). Each case: a server on one address, a client (client-only,
// or listening on another) dialing a target; the call must succeed.
func TestReviewTCPFamilies(t *testing.T) {
	reviewHasIPv6(t)
	cases := []struct{ server, client, dialHost string }{
		{"tcp://[::1]:0", "tcp://", "[::1]"},
		{"tcp://127.0.0.1:0", "tcp://", "localhost"},
		{"tcp://[::]:0", "tcp://", "127.0.0.1"},
		{"tcp://[::]:0", "tcp://", "[::1]"},
		{"tcp://:0", "tcp://", "[::1]"},
		{"tcp://[::]:0", "tcp://[::]:0", "127.0.0.1"},
		{"tcp://[::1]:0", "tcp://[::]:0", "[::1]"},
		{"tcp://[::1]:0", "tcp://:0", "[::1]"},
		{"tcp://0.0.0.0:0", "tcp://", "[::1]"},        // 0.0.0.0 serves both families
		{"tcp://[::1]:0", "tcp://0.0.0.0:0", "[::1]"}, // 0.0.0.0 dials both families
		{"tcp://127.0.0.1:0", "tcp://0.0.0.0:0", "127.0.0.1"},
	}
	var fails []string
	for _, c := range cases {
		sep, err := reviewEchoServer(t).Listen(c.server, erpc.Insecure()) // plaintext on a wildcard: on purpose (tls_policy.go)
		if err != nil {
			fails = append(fails, c.server+": "+err.Error())
			continue
		}
		port := sep.Target()[strings.LastIndex(sep.Target(), ":")+1:]
		cep, err := erpc.Listen(c.client)
		if err != nil {
			sep.Close()
			fails = append(fails, c.client+": "+err.Error())
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		target := "tcp://" + c.dialHost + ":" + port
		s, err := cep.Dial(ctx, target)
		if err == nil {
			_, err = s.Call(ctx, "Echo", []byte("x"), nil)
			s.Close()
		}
		if err != nil {
			fails = append(fails, "server "+c.server+", client "+c.client+", dial "+target+": "+err.Error())
		}
		cancel()
		cep.Close()
		sep.Close()
	}
	if len(fails) > 0 {
		t.Fatalf("%d of %d cases failed:\n%s", len(fails), len(cases), strings.Join(fails, "\n"))
	}
}
