//go:build linux

package network

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/testnet"
	"github.com/erpc-go/erpc/transport/udp"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/testbed"
)

// mpClient is what a run measures with: a bulk caller and a small caller.
type mpClient struct {
	bulk  func(ctx context.Context, req []byte) error
	small func(ctx context.Context, req []byte) error
	stats func() erpc.Stats
	close func()
}

func startMPClient(b *scenario.Bench, tp *testnet.TwoPath, sink *testbed.Sink, r *mpRun) (*mpClient, error) {
	nc := b.Cfg.Ext.(*netConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r.system == "grpc" {
		g, err := newGRPCSender(tp.A, sink.TCPAddr(), &net.TCPAddr{Port: int(r.ports[0])}, 32, 32)
		if err != nil {
			return nil, err
		}
		call := func(ctx context.Context, req []byte) error {
			var resp systems.RawMsg
			err := g.conn.Invoke(ctx, "/erpcbench.Bench/Sink", &systems.RawMsg{B: req}, &resp)
			if err == nil && len(resp.B) != 32 {
				err = meter.ErrShortResponse
			}
			return err
		}
		return &mpClient{bulk: call, small: call, close: g.Close}, nil
	}
	var ep *erpc.Endpoint
	err := testnet.In(tp.A, func() error {
		var extra []int
		for _, p := range r.ports[1:] {
			extra = append(extra, int(p))
		}
		// Bound to the Client address (one host on every path), whose
		// loopback MTU would make the transport pick 64 KiB datagrams:
		// the links' MTU is 1500.
		u, err := udp.Listen(net.JoinHostPort(tp.Client.String(), strconv.Itoa(int(r.ports[0]))),
			udp.Options{Paths: r.paths, PathPorts: extra, PacketSize: 1472})
		if err != nil {
			return err
		}
		opts := append(systems.ErpcOptions(false, nc.window), erpc.WithTransport(u))
		if r.system == "erpc-spray" {
			opts = append(opts, erpc.WithBlindSpray())
		}
		ep, err = erpc.Listen("", opts...)
		if err != nil {
			u.Close()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	target := sink.UDPAddr()
	s1, err := ep.Dial(ctx, target)
	if err != nil {
		ep.Close()
		return nil, err
	}
	s2, err := ep.Dial(ctx, target)
	if err != nil {
		ep.Close()
		return nil, err
	}
	mk := func(s *erpc.Session) func(context.Context, []byte) error {
		return func(ctx context.Context, req []byte) error {
			out, err := s.Call(ctx, "Sink", req, make([]byte, 0, 32))
			if err == nil && len(out) != 32 {
				err = meter.ErrShortResponse
			}
			return err
		}
	}
	return &mpClient{bulk: mk(s1), small: mk(s2), stats: ep.Stats,
		close: func() { s1.Close(); s2.Close(); ep.Close() }}, nil
}
