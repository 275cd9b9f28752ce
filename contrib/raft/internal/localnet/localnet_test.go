package localnet

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/faults"
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
		es := erpc.NewServer()
		if err := es.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
			t.Fatal(err)
		}
		srv, err := es.Listen(listen)
		if err != nil {
			t.Fatal(err)
		}
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

// TestLossy: a server on a lossy transport, on each network, is reached at
// its advertised address (or its bound one, for UDP), every call succeeds,
// and the loss shows in the client's retransmissions.
func TestLossy(t *testing.T) {
	networks := []string{"udp", "mem"}
	if runtime.GOOS == "linux" {
		networks = append(networks, "shm")
	}
	for _, network := range networks {
		n, err := New(network, "lossy")
		if err != nil {
			t.Fatal(err)
		}
		listen := n.Listen(0)
		tr, err := faults.Listen(listen, 0.2, 1)
		if err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		es := erpc.NewServer()
		if err := es.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
			t.Fatal(err)
		}
		srv, err := es.Listen(listen, erpc.WithTransport(tr))
		if err != nil {
			t.Fatal(err)
		}
		target := Advertise(listen)
		if target == "" {
			target = Dialable(listen, srv)
		}
		cli, err := erpc.Listen(Client(network))
		if err != nil {
			t.Fatal(err)
		}
		s, err := cli.Dial(t.Context(), target)
		if err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		for i := range 50 {
			want := []byte{byte(i)}
			if got, err := s.Call(t.Context(), "Echo", want, nil); err != nil || string(got) != string(want) {
				t.Fatalf("%s: call %d: %q, %v", network, i, got, err)
			}
		}
		if cli.Stats().Retransmits == 0 {
			t.Errorf("%s: 50 calls through 20%% loss, and no retransmission", network)
		}
		cli.Close()
		srv.Close()
		n.Close()
	}
	if _, err := faults.Listen("pigeon://x", 0.1, 1); err == nil {
		t.Fatal("unknown transport accepted")
	}
}
