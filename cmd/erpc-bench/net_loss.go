//go:build linux

package main

import (
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/testnet"
)

// loss -testbed: the loss scenario over a real link. Client and server in
// two network namespaces joined by a veth (testnet.Pair), no bottleneck,
// each namespace dropping -loss of the UDP and TCP packets it receives at
// random (nftables), so requests and answers are both lost; erpc (its
// own client process and a netsink server in the server namespace) beside
// gRPC over TCP under the same loss. Rows as the loss scenario's, with
// rel_lossless (throughput over the same system's at no loss) and the
// packets the rules dropped.

func (b *bench) runLossTestbed() error {
	losses := []float64{0}
	for _, l := range b.cfg.loss {
		if l != 0 {
			losses = append(losses, l)
		}
	}
	return withTestbed(b.out.ew, func(tb *netTB) error {
		p := testnet.NewPair(tb)
		testnet.Boost(tb)
		sink, err := startNetSink(p.B, p.AddrB, b.srvCPU, b.cfg.window)
		if err != nil {
			return err
		}
		tb.Cleanup(sink.stop)
		var peers []*peer
		defer func() {
			for _, x := range peers {
				x.cli.close()
			}
		}()
		for _, s := range b.cfg.systems {
			cli, err := b.testbedClient(s, p, sink)
			if err != nil {
				return fmt.Errorf("%s client: %w", s, err)
			}
			peers = append(peers, &peer{system: s, cli: cli})
		}
		pts := b.points(1, 0)
		b.out.expect(len(losses) * len(pts) * len(peers))
		base := map[string]float64{}
		for _, l := range losses {
			p.LossOf(tb, p.A, l, "udp", "tcp")
			p.LossOf(tb, p.B, l, "udp", "tcp")
			for k, pt := range b.points(1, l) {
				for j := range peers {
					x := peers[(j+k)%len(peers)]
					d0 := p.Dropped(tb, p.A) + p.Dropped(tb, p.B)
					r := b.measure(x, pt)
					d1 := p.Dropped(tb, p.A) + p.Dropped(tb, p.B)
					key := fmt.Sprintf("%s/%d/%d", r.system, r.p.size, r.p.conc)
					qps := 0.0
					if r.secs > 0 {
						qps = float64(r.ops) / r.secs
					}
					if l == 0 {
						base[key] = qps
					}
					if r.extra == nil {
						r.extra = map[string]any{}
					}
					r.extra["loss"] = l
					r.extra["testbed"] = "veth pair, nftables loss both ways"
					r.extra["dropped"] = d1 - d0
					if q := base[key]; q > 0 {
						r.extra["rel_lossless"] = qps / q
					}
					b.out.add(r)
				}
			}
		}
		return nil
	})
}

// testbedClient opens system's client in the Pair's client namespace.
func (b *bench) testbedClient(system string, p *testnet.Pair, sink *netSinkHandle) (client, error) {
	if system == "grpc" {
		conn, err := grpc.NewClient("passthrough:///"+sink.tcpAddr(),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(dialIn(p.A, nil)),
			grpc.WithDefaultCallOptions(grpc.CallContentSubtype(grpcRawCodec{}.Name()),
				grpc.MaxCallRecvMsgSize(grpcMaxMsg), grpc.MaxCallSendMsgSize(grpcMaxMsg)))
		if err != nil {
			return nil, err
		}
		return &grpcClient{conn: conn}, nil
	}
	var ep *erpc.Endpoint
	err := testnet.In(p.A, func() (err error) {
		ep, err = erpc.Listen(net.JoinHostPort(p.AddrA.String(), "0"), erpcOptions(b.cfg.busy, b.cfg.window)...)
		return err
	})
	if err != nil {
		return nil, err
	}
	c := &erpcClient{ep: ep, target: sink.udpAddr(), async: system != "erpc-call"}
	if err := c.ensureSessions(1); err != nil {
		ep.Close()
		return nil, err
	}
	return c, nil
}
