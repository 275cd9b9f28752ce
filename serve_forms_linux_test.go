//go:build linux

package erpc_test

import (
	"strings"
	"testing"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/shm"
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
	tr, err := shm.Listen("", shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if ep, err := srv.Listen("", erpc.WithTransport(tr)); erpc.CodeOf(err) != erpc.InvalidArgument {
		if err == nil {
			ep.Close()
		}
		t.Fatalf("Server.Listen on a client-only shm transport: %v; want InvalidArgument", err)
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
