package faults_test

import (
	"net/netip"
	"testing"

	"github.com/erpc-go/erpc/internal/faults"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/memnet"
)

func TestLossyDropsAFraction(t *testing.T) {
	n := memnet.NewNetwork(1, memnet.LinkConfig{})
	a, _ := n.Listen("")
	b, _ := n.Listen("b")
	defer a.Close()
	defer b.Close()
	l := faults.Lossy(a, 0.25, 7)
	if to, err := l.(interface {
		Resolve(string) (netip.AddrPort, error)
	}).Resolve("b"); err != nil || to != b.LocalAddr() {
		t.Fatalf("Resolve not forwarded: %v %v", to, err)
	}
	msgs := make([]transport.Message, 100)
	for i := range msgs {
		msgs[i] = transport.Message{To: b.LocalAddr(), Head: []byte{byte(i)}}
	}
	for range 40 {
		if err := l.Send(msgs); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := b.Receive(func(netip.AddrPort, []byte) {})
	if got < 2800 || got > 3200 {
		t.Fatalf("%d of 4000 datagrams arrived through 25%% loss", got)
	}
}
