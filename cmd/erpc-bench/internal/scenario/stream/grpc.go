package stream

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// The gRPC side: the same two methods as erpc's, a server-streaming Flood
// and a bidirectional Echo, gRPC-Go's defaults except the message limits,
// raw bytes through systems.GRPCRawCodec.

var (
	grpcFloodDesc = grpc.StreamDesc{StreamName: "Flood", ServerStreams: true, Handler: grpcFlood}
	grpcEchoDesc  = grpc.StreamDesc{StreamName: "Echo", ServerStreams: true, ClientStreams: true, Handler: grpcEcho}
	grpcService   = grpc.ServiceDesc{ServiceName: "erpcbench.Stream", HandlerType: (*any)(nil),
		Streams: []grpc.StreamDesc{grpcFloodDesc, grpcEchoDesc}}
)

func grpcFlood(_ any, ss grpc.ServerStream) error {
	in := new(systems.RawMsg)
	if err := ss.RecvMsg(in); err != nil {
		return err
	}
	out := &systems.RawMsg{B: in.B}
	for {
		if err := ss.SendMsg(out); err != nil {
			return nil
		}
	}
}

func grpcEcho(_ any, ss grpc.ServerStream) error {
	m := new(systems.RawMsg)
	for {
		if err := ss.RecvMsg(m); err != nil {
			return nil
		}
		if err := ss.SendMsg(m); err != nil {
			return nil
		}
	}
}

type grpcServer struct {
	srv *grpc.Server
	lis net.Listener
}

func newGRPCServer(proc.Config) (proc.Impl, error) {
	lis, err := systems.ListenTCP()
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(systems.GRPCMaxMsg), grpc.MaxSendMsgSize(systems.GRPCMaxMsg))
	srv.RegisterService(&grpcService, struct{}{})
	go srv.Serve(lis)
	return &grpcServer{srv: srv, lis: lis}, nil
}

func (s *grpcServer) Addr() string { return s.lis.Addr().String() }
func (s *grpcServer) Close()       { s.srv.Stop() }
func (s *grpcServer) Control(args []string) (string, error) {
	return "", fmt.Errorf("unknown command %q", args[0])
}

// grpcClient opens its streams on one connection.
type grpcClient struct{ conn *grpc.ClientConn }

func newGRPCClient(addr string) (client, error) {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype(systems.GRPCRawCodec{}.Name()),
			grpc.MaxCallRecvMsgSize(systems.GRPCMaxMsg), grpc.MaxCallSendMsgSize(systems.GRPCMaxMsg)))
	if err != nil {
		return nil, err
	}
	return &grpcClient{conn: conn}, nil
}

func (c *grpcClient) Close() { c.conn.Close() }

func (c *grpcClient) flood(ctx context.Context, msg []byte) (recvFunc, error) {
	cs, err := c.conn.NewStream(ctx, &grpcFloodDesc, "/erpcbench.Stream/Flood")
	if err != nil {
		return nil, err
	}
	if err := cs.SendMsg(&systems.RawMsg{B: msg}); err != nil {
		return nil, err
	}
	if err := cs.CloseSend(); err != nil {
		return nil, err
	}
	in := new(systems.RawMsg)
	return func() (int, error) {
		err := cs.RecvMsg(in)
		return len(in.B), err
	}, nil
}

func (c *grpcClient) echo(ctx context.Context, msg []byte) (recvFunc, error) {
	cs, err := c.conn.NewStream(ctx, &grpcEchoDesc, "/erpcbench.Stream/Echo")
	if err != nil {
		return nil, err
	}
	out, in := &systems.RawMsg{B: msg}, new(systems.RawMsg)
	return func() (int, error) {
		if err := cs.SendMsg(out); err != nil {
			return 0, err
		}
		err := cs.RecvMsg(in)
		return len(in.B), err
	}, nil
}
