package erpc_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	_ "github.com/erpc-go/erpc/codec/protocodec"
	"github.com/erpc-go/erpc/transport/memnet"
	"github.com/erpc-go/erpc/transport/rpctest"
)

// memNet: endpoints on a fresh in-memory network per test.
type memNet struct{ net *memnet.Network }

func newMemNet() *memNet { return &memNet{memnet.NewNetwork(1, memnet.LinkConfig{})} }

func (n *memNet) Listen(t *testing.T, srv *erpc.Server, opts ...erpc.Option) *erpc.Endpoint {
	tr, err := n.net.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	return listenT(t, srv, "", append(opts, erpc.WithTransport(tr))...)
}

// listenT opens an endpoint on addr serving srv (nil: calls only), closed
// when the test ends.
func listenT(t *testing.T, srv *erpc.Server, addr string, opts ...erpc.Option) *erpc.Endpoint {
	t.Helper()
	var ep *erpc.Endpoint
	var err error
	if srv == nil {
		ep, err = erpc.Listen(addr, opts...)
	} else {
		ep, err = srv.Listen(addr, opts...)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

// serverWith returns a server with one handler.
func serverWith(t *testing.T, method string, fn func(context.Context, []byte) ([]byte, error), opts ...erpc.HandlerOption) *erpc.Server {
	t.Helper()
	srv := erpc.NewServer()
	if err := srv.Handle(method, fn, opts...); err != nil {
		t.Fatal(err)
	}
	return srv
}

func echoHandler(_ context.Context, req []byte) ([]byte, error) { return req, nil }

func (n *memNet) Target(ep *erpc.Endpoint) string { return ep.Addr().String() }

// udpNet: endpoints on UDP loopback.
type udpNet struct{}

func (udpNet) Listen(t *testing.T, srv *erpc.Server, opts ...erpc.Option) *erpc.Endpoint {
	return listenT(t, srv, "127.0.0.1:0", opts...)
}

func (udpNet) Target(ep *erpc.Endpoint) string { return ep.Addr().String() }

// checkLeaks fails the test if goroutines of erpc outlive it.
func checkLeaks(t *testing.T) {
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for {
			var buf [1 << 20]byte
			stacks := string(buf[:runtime.Stack(buf[:], true)])
			var leaked []string
			for _, g := range strings.Split(stacks, "\n\n") {
				if strings.Contains(g, "github.com/erpc-go/erpc.") && !strings.Contains(g, "checkLeaks") &&
					!strings.Contains(g, "testing.tRunner") {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines leaked:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func call(t *testing.T, s *erpc.Session, method string, req []byte) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Call(ctx, method, req, nil)
}

func dialT(t *testing.T, n rpctest.Net, cli, srv *erpc.Endpoint) *erpc.Session {
	t.Helper()
	s, err := cli.Dial(context.Background(), n.Target(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mustListen opens a transport on n at a fresh address.
func mustListen(t *testing.T, n *memnet.Network) *memnet.Transport {
	tr, err := n.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
