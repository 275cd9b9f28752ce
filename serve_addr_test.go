package erpc_test

import (
	"context"
	"testing"

	"github.com/erpc-go/erpc"
)

// TestAddrOfWildcardBind: as Endpoint.Addr says, a UDP endpoint bound to
// all interfaces gives loopback with the socket's port, which is dialable.
func TestAddrOfWildcardBind(t *testing.T) {
	ep := listenT(t, serverWith(t, "Echo", echoHandler), ":0", erpc.Insecure())
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
