package fleet

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// gRPC's peer row: a ClientConn with the round_robin policy over the
// dns:/// target (its own DNS resolver, defaults kept: it re-resolves when
// a connection fails, at most every 30 s), or, without a DNS server on
// the testbed, over a fixed list (a manual resolver).

// grpcRoundRobin is the service config that selects round_robin.
const grpcRoundRobin = `{"loadBalancingConfig":[{"round_robin":{}}]}`

type grpcClient struct{ conn *grpc.ClientConn }

func newGRPCClient(s loadSpec) (fleetClient, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(grpcRoundRobin),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype(systems.GRPCRawCodec{}.Name())),
	}
	target := s.Target
	if len(s.Static) > 0 {
		r := manual.NewBuilderWithScheme("fleet")
		var st resolver.State
		for _, a := range s.Static {
			st.Addresses = append(st.Addresses, resolver.Address{Addr: a})
		}
		r.InitialState(st)
		opts = append(opts, grpc.WithResolvers(r))
		target = "fleet:///replicas"
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, err
	}
	return &grpcClient{conn: conn}, nil
}

func (c *grpcClient) call(ctx context.Context, req []byte) ([]byte, error) {
	var resp systems.RawMsg
	err := c.conn.Invoke(ctx, "/erpcbench.Bench/Echo", &systems.RawMsg{B: req}, &resp)
	return resp.B, err
}

func (c *grpcClient) close() { c.conn.Close() }

func init() { clientMakers["grpc"] = newGRPCClient }
