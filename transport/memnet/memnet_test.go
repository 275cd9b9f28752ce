package memnet

import (
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Transport {
		net := NewNetwork(1, LinkConfig{})
		var trs []transport.Transport
		for range n {
			tr, err := net.Listen("")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			trs = append(trs, tr)
		}
		return trs
	})
}

func TestNamesAndDelay(t *testing.T) {
	n := NewNetwork(1, LinkConfig{Delay: 30 * time.Millisecond})
	srv, err := n.Listen("server")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := n.Listen("server"); err == nil {
		t.Fatal("a name was bound twice")
	}
	cli, _ := n.Listen("")
	defer cli.Close()
	to, err := cli.Resolve("server")
	if err != nil || to != srv.LocalAddr() {
		t.Fatalf("resolve: %v %v", to, err)
	}
	start := time.Now()
	cli.Send([]transport.Message{{To: to, Head: []byte("hi")}})
	var got []byte
	for got == nil {
		srv.Receive(func(_ netip.AddrPort, d []byte) { got = append([]byte(nil), d...) })
		if got == nil {
			srv.Wait(time.Now().Add(time.Second))
		}
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("datagram arrived after %v, link delay is 30ms", d)
	}
	srv.Close()
	if _, err := n.Resolve("server"); err == nil {
		t.Fatal("name still bound after Close")
	}
}

func TestLoss(t *testing.T) {
	n := NewNetwork(7, LinkConfig{Loss: 0.5})
	a, _ := n.Listen("")
	b, _ := n.Listen("")
	defer a.Close()
	defer b.Close()
	for range 1000 {
		a.Send([]transport.Message{{To: b.LocalAddr(), Head: []byte("x")}})
	}
	got, _ := b.Receive(func(netip.AddrPort, []byte) {})
	if got < 400 || got > 600 {
		t.Fatalf("%d of 1000 datagrams arrived through a link losing half", got)
	}
}

// TestStatsAndInboxBound: Delivered counts what receivers took, and a
// receiver that does not read holds at most InboxBytes; the rest is
// dropped and counted, as a socket's receive buffer would.
func TestStatsAndInboxBound(t *testing.T) {
	n := NewNetwork(1, LinkConfig{})
	a, _ := n.Listen("")
	b, _ := n.Listen("")
	defer a.Close()
	defer b.Close()
	payload := make([]byte, 60000)
	msgs := []transport.Message{{To: b.LocalAddr(), Head: []byte{1}, Payload: payload}}
	const sent = 2 * InboxBytes / 60000
	for range sent {
		if err := a.Send(msgs); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := b.Receive(func(netip.AddrPort, []byte) {})
	st := n.Stats()
	if st.Sent != sent || st.Delivered != uint64(got) || st.Overflows == 0 || uint64(got)+st.Overflows != sent {
		t.Fatalf("sent %d, received %d: %+v", sent, got, st)
	}
	if int(got)*60001 > InboxBytes {
		t.Fatalf("the inbox held %d bytes, over its bound %d", got*60001, InboxBytes)
	}
}
