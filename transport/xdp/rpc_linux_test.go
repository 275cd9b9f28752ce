//go:build linux

package xdp

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/rpctest"
)

// xdpNet serves over AF_XDP in namespace A; its clients are in B, over
// AF_XDP too or over the kernel's UDP. A server and a client at a time:
// an interface takes one XDP program, hence one AF_XDP transport.
type xdpNet struct {
	p         vethPair
	clientXDP bool
}

func (n xdpNet) Listen(t *testing.T, srv *erpc.Server, opts ...erpc.Option) *erpc.Endpoint {
	t.Helper()
	// The veth pair is the tests' own, shared with nothing: without
	// congestion control, whose delay signal the test machine's load
	// (and the race detector) would otherwise turn into minutes for
	// rpctest's 8 MiB echoes.
	opts = append(opts, erpc.Insecure(), erpc.WithoutCongestionControl())
	ns, addr := n.p.B, n.p.AddrB
	if srv != nil || n.clientXDP {
		if srv != nil {
			ns, addr = n.p.A, n.p.AddrA
		}
		opts = append(opts, erpc.WithTransport(listenXDP(t, n.p, ns, addr, Options{})))
	}
	var ep *erpc.Endpoint
	in(t, ns, func() (err error) {
		if srv != nil {
			ep, err = srv.Listen(addr.String()+":0", opts...)
		} else {
			ep, err = erpc.Listen(addr.String()+":0", opts...)
		}
		return err
	})
	t.Cleanup(func() { ep.Close() })
	return ep
}

func (n xdpNet) Target(ep *erpc.Endpoint) string { return ep.Target() }

// TestRPC runs rpctest with erpc over AF_XDP at both ends. (With a
// kernel UDP client it passes too, but its 8 MiB echoes take minutes on
// a busy veth, as they do with UDP at both ends; TestRoundTrip covers
// AF_XDP beside kernel UDP.)
func TestRPC(t *testing.T) {
	rpctest.RunRPC(t, xdpNet{newVethPair(t), true})
}

// TestRoundTrip: an erpc call from namespace B (kernel UDP) to a server
// over AF_XDP in A and back, and the server's transport counted the
// request in its RX ring and the reply in its TX ring: the datagrams
// took the AF_XDP path, not the kernel socket's.
func TestRoundTrip(t *testing.T) {
	p := newVethPair(t)
	srv := erpc.NewServer()
	if err := srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
		t.Fatal(err)
	}
	n := xdpNet{p: p}
	x := listenXDP(t, p, p.A, p.AddrA, Options{})
	var ep *erpc.Endpoint
	in(t, p.A, func() (err error) {
		ep, err = srv.Listen("", erpc.WithTransport(x), erpc.Insecure())
		return err
	})
	t.Cleanup(func() { ep.Close() })
	cli := n.Listen(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cli.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatalf("dial %s: %v", ep.Target(), err)
	}
	defer s.Close()
	before := x.Stats()
	for i := range 100 {
		req := bytes.Repeat([]byte{byte(i)}, i*37)
		resp, err := s.Call(ctx, "Echo", req, nil)
		if err != nil || !bytes.Equal(resp, req) {
			t.Fatalf("call %d: %d bytes back, %v", i, len(resp), err)
		}
	}
	after := x.Stats()
	t.Logf("mode %s, target %s: %+v", x.Mode(), ep.Target(), after)
	if got := after.RingReceived - before.RingReceived; got < 100 {
		t.Errorf("the RX ring delivered %d datagrams for 100 calls", got)
	}
	if got := after.Sent - before.Sent; got < 100 {
		t.Errorf("the TX ring sent %d datagrams for 100 replies", got)
	}
	if after.KernelReceived != 0 {
		t.Errorf("%d datagrams came through the kernel socket", after.KernelReceived)
	}
}
