package udp

import (
	"testing"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Transport {
		var trs []transport.Transport
		for range n {
			tr, err := Listen("127.0.0.1:0", Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			trs = append(trs, tr)
		}
		return trs
	})
}

// TestPacketSize: loopback's large MTU is used, an unknown path gets an
// Ethernet-sized datagram, and an explicit size wins.
func TestPacketSize(t *testing.T) {
	for _, c := range []struct {
		addr string
		opts Options
		min  int
		max  int
	}{
		{"127.0.0.1:0", Options{}, defaultPacketSize + 1, MaxDatagram}, // lo: 65536 on Linux, 16384 on darwin
		{":0", Options{}, defaultPacketSize, defaultPacketSize},
		{"127.0.0.1:0", Options{PacketSize: 9000}, 9000, 9000},
	} {
		tr, err := Listen(c.addr, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.PacketSize(); got < c.min || got > c.max {
			t.Errorf("Listen(%q, %+v).PacketSize() = %d, want %d..%d", c.addr, c.opts, got, c.min, c.max)
		}
		tr.Close()
	}
}
