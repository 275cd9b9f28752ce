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
