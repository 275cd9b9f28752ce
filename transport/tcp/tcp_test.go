package tcp_test

import (
	"testing"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/rpctest"
	"github.com/erpc-go/erpc/transport/tcp"
	"github.com/erpc-go/erpc/transport/transporttest"
)

func listen(t testing.TB, addr string) *tcp.Transport {
	t.Helper()
	tr, err := tcp.Listen(addr, tcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Transport {
		var trs []transport.Transport
		for range n {
			trs = append(trs, listen(t, "127.0.0.1:0"))
		}
		return trs
	})
}

// tcpNet is the rpctest.Net of endpoints on loopback TCP ports.
type tcpNet struct{}

func (*tcpNet) Listen(t *testing.T, srv *erpc.Server, opts ...erpc.Option) *erpc.Endpoint {
	var ep *erpc.Endpoint
	var err error
	if srv == nil {
		ep, err = erpc.Listen("tcp://", opts...)
	} else {
		ep, err = srv.Listen("tcp://127.0.0.1:0", opts...)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

func (*tcpNet) Target(ep *erpc.Endpoint) string { return ep.Target() }

func TestRPC(t *testing.T) {
	rpctest.RunRPC(t, &tcpNet{})
}
