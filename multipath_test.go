package erpc_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
)

// TestMultipath: a client endpoint spreading its sessions over three paths
// (WithPaths) works over UDP, every size of message; and over the
// in-memory network with one of its paths dead, every call still succeeds:
// retransmissions move to the paths that work.
func TestMultipath(t *testing.T) {
	checkLeaks(t)
	srv := udpNet{}.Listen(t, serverWith(t, "Echo", echoHandler))
	s := dialT(t, udpNet{}, udpNet{}.Listen(t, nil, erpc.WithPaths(3)), srv)
	for _, size := range []int{0, 32, 5000, 200 << 10, 2 << 20} {
		req := bytes.Repeat([]byte{byte(size)}, size)
		if resp, err := call(t, s, "Echo", req); err != nil || !bytes.Equal(resp, req) {
			t.Fatalf("%d bytes over 3 paths: %v", size, err)
		}
	}

	net := memnet.NewNetwork(1, memnet.LinkConfig{})
	server, err := net.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	client, err := net.ListenPaths("", 3)
	if err != nil {
		t.Fatal(err)
	}
	dead := memnet.PathAddr(client.LocalAddr(), 2)
	net.SetLink(dead, server.LocalAddr(), memnet.LinkConfig{Down: true})
	mep := listenT(t, serverWith(t, "Echo", echoHandler), "", erpc.WithTransport(server))
	cep := listenT(t, nil, "", erpc.WithTransport(client))
	ms, err := cep.Dial(context.Background(), mep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	for i := range 50 {
		req := bytes.Repeat([]byte{byte(i)}, 3000)
		if resp, err := call(t, ms, "Echo", req); err != nil || !bytes.Equal(resp, req) {
			t.Fatalf("call %d with a dead path: %v", i, err)
		}
	}
	if st := cep.Stats(); st.Retransmits == 0 {
		t.Fatal("no retransmission although a path drops everything")
	}
}
