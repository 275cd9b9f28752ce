package erpc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/erpc-go/erpc"
)

// TestServeClientOnlyForm: "shm://" (no socket path) makes an endpoint no
// one can reach: Server.Listen refuses it with InvalidArgument naming the
// form to use, while the package-level Listen (calls only) takes it. The
// other forms with nothing after the scheme pick an address a client can
// dial (Target), so a server may use them.
func TestServeClientOnlyForm(t *testing.T) {
	srv := serverWith(t, "Echo", echoHandler)
	ep, err := srv.Listen("shm://")
	if err == nil {
		ep.Close()
		t.Fatal(`Server.Listen("shm://") made a server no client can reach`)
	}
	if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "shm:///") {
		t.Fatalf(`Server.Listen("shm://"): %v; want InvalidArgument naming shm:///path`, err)
	}
	cli, err := erpc.Listen("shm://")
	if err != nil {
		t.Fatalf(`Listen("shm://") for calls only: %v`, err)
	}
	cli.Close()
	for _, addr := range []string{"mem://", "127.0.0.1:0", "udp://127.0.0.1:0"} {
		ep, err := srv.Listen(addr)
		if err != nil {
			t.Fatalf("Server.Listen(%q): %v", addr, err)
		}
		if ep.Target() == "" {
			t.Errorf("Server.Listen(%q) has no Target to dial", addr)
		}
		ep.Close()
	}
}

// TestAddrOfWildcardBind: as Endpoint.Addr says, a UDP endpoint bound to
// all interfaces gives loopback with the socket's port, which is dialable.
func TestAddrOfWildcardBind(t *testing.T) {
	ep := listenT(t, serverWith(t, "Echo", echoHandler), ":0")
	if a := ep.Addr(); !a.Addr().IsLoopback() || a.Port() == 0 {
		t.Fatalf("Addr of a wildcard bind: %v; want loopback with the port", a)
	}
	s, err := erpc.Dial(context.Background(), ep.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := call(t, s, "Echo", []byte("x")); err != nil {
		t.Fatal(err)
	}
}
