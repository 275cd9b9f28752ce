//go:build linux

package network

import (
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/testnet"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/testbed"
)

// loss -testbed: the loss scenario over a real link. Client and server in
// two network namespaces joined by a veth (testnet.Pair), no bottleneck,
// each namespace dropping -loss of the UDP and TCP packets it receives at
// random (nftables), so requests and answers are both lost; erpc (its
// own client process and a netsink server in the server namespace) beside
// gRPC over TCP under the same loss. Rows as the loss scenario's, with
// rel_lossless (throughput over the same system's at no loss) and the
// packets the rules dropped.

// RunLossTestbed runs the loss scenario on the testbed (loss -testbed).
func RunLossTestbed(b *scenario.Bench) error {
	losses := []float64{0}
	for _, l := range b.Cfg.Loss {
		if l != 0 {
			losses = append(losses, l)
		}
	}
	return testbed.Run(b.Out.Ew, func(tb *testbed.TB) error {
		p := testnet.NewPair(tb)
		testnet.Boost(tb)
		sink, err := testbed.StartSink(p.B, p.AddrB, b.SrvCPU, b.Cfg.Window)
		if err != nil {
			return err
		}
		tb.Cleanup(sink.Stop)
		var peers []*systems.Peer
		defer func() {
			for _, x := range peers {
				x.Cli.Close()
			}
		}()
		for _, s := range b.Cfg.Systems {
			cli, err := testbedClient(b, s, p, sink)
			if err != nil {
				return fmt.Errorf("%s client: %w", s, err)
			}
			peers = append(peers, &systems.Peer{System: s, Cli: cli})
		}
		pts := b.Points(1, 0)
		b.Out.Expect(len(losses) * len(pts) * len(peers))
		base := map[string]float64{}
		for _, l := range losses {
			p.LossOf(tb, p.A, l, "udp", "tcp")
			p.LossOf(tb, p.B, l, "udp", "tcp")
			for k, pt := range b.Points(1, l) {
				for j := range peers {
					x := peers[(j+k)%len(peers)]
					d0 := p.Dropped(tb, p.A) + p.Dropped(tb, p.B)
					r := b.Measure(x, pt)
					d1 := p.Dropped(tb, p.A) + p.Dropped(tb, p.B)
					key := fmt.Sprintf("%s/%d/%d", r.System, r.P.Size, r.P.Conc)
					qps := 0.0
					if r.Secs > 0 {
						qps = float64(r.Ops) / r.Secs
					}
					if l == 0 {
						base[key] = qps
					}
					if r.Extra == nil {
						r.Extra = map[string]any{}
					}
					r.Extra["loss"] = l
					r.Extra["testbed"] = "veth pair, nftables loss both ways"
					r.Extra["dropped"] = d1 - d0
					if q := base[key]; q > 0 {
						r.Extra["rel_lossless"] = qps / q
					}
					b.Out.Add(r)
				}
			}
		}
		return nil
	})
}

// testbedClient opens system's client in the Pair's client namespace.
func testbedClient(b *scenario.Bench, system string, p *testnet.Pair, sink *testbed.Sink) (meter.Client, error) {
	if system == "grpc" {
		conn, err := grpc.NewClient("passthrough:///"+sink.TCPAddr(),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(dialIn(p.A, nil)),
			grpc.WithDefaultCallOptions(grpc.CallContentSubtype(systems.GRPCRawCodec{}.Name()),
				grpc.MaxCallRecvMsgSize(systems.GRPCMaxMsg), grpc.MaxCallSendMsgSize(systems.GRPCMaxMsg)))
		if err != nil {
			return nil, err
		}
		return &systems.GRPCClient{Conn: conn}, nil
	}
	var ep *erpc.Endpoint
	err := testnet.In(p.A, func() (err error) {
		ep, err = erpc.Listen(net.JoinHostPort(p.AddrA.String(), "0"), systems.ErpcOptions(b.Cfg.Busy, b.Cfg.Window)...)
		return err
	})
	if err != nil {
		return nil, err
	}
	c := &systems.ErpcClient{Ep: ep, Target: sink.UDPAddr(), Async: system != "erpc-call"}
	if err := c.EnsureSessions(1); err != nil {
		ep.Close()
		return nil, err
	}
	return c, nil
}
