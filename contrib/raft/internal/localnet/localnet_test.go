package localnet

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/erpc-go/erpc"
)

// TestDialable: an endpoint on each network is reached at the address
// Dialable gives, and Close removes the shm directory.
func TestDialable(t *testing.T) {
	networks := []string{"udp", "mem"}
	if runtime.GOOS == "linux" {
		networks = append(networks, "shm")
	}
	for _, network := range networks {
		n, err := New(network, "localnet")
		if err != nil {
			t.Fatal(err)
		}
		listen := n.Listen(0)
		srv, err := erpc.Listen(listen)
		if err != nil {
			t.Fatal(err)
		}
		srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
		s, err := erpc.Dial(t.Context(), Dialable(listen, srv))
		if err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		if got, err := s.Call(t.Context(), "Echo", []byte("x"), nil); err != nil || string(got) != "x" {
			t.Fatalf("%s: %q, %v", network, got, err)
		}
		s.Close()
		srv.Close()
		n.Close()
		if n.dir != "" {
			if _, err := os.Stat(n.dir); !os.IsNotExist(err) {
				t.Fatalf("%s left behind: %v", n.dir, err)
			}
		}
	}
	if _, err := New("carrier-pigeon", "localnet"); err == nil {
		t.Fatal("unknown network accepted")
	}
}
