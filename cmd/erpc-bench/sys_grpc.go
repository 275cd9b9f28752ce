package main

import (
	"context"
	"fmt"
	"math"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
)

// gRPC with default settings, except message limits raised to carry 8 MiB,
// and a codec that passes bytes through (selected per call by content
// subtype), so protobuf's cost is not counted.

type grpcRawCodec struct{}

func (grpcRawCodec) Name() string { return "erpcbenchraw" }

func (grpcRawCodec) Marshal(v any) ([]byte, error) { return v.(*rawMsg).b, nil }

func (grpcRawCodec) Unmarshal(data []byte, v any) error {
	m := v.(*rawMsg)
	m.b = append(m.b[:0], data...)
	return nil
}

func init() { encoding.RegisterCodec(grpcRawCodec{}) }

// grpcMaxMsg is gRPC's message limit here: its largest (the default is
// 4 MiB, which would fail every call above it).
const grpcMaxMsg = math.MaxInt32

func grpcHandler(want func(*rawMsg) []byte) grpc.MethodHandler {
	return func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(rawMsg)
		if err := dec(in); err != nil {
			return nil, err
		}
		return &rawMsg{b: want(in)}, nil
	}
}

var grpcDesc = grpc.ServiceDesc{
	ServiceName: "erpcbench.Bench",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Echo", Handler: grpcHandler(func(m *rawMsg) []byte { return m.b })},
		{MethodName: "Sink", Handler: grpcHandler(func(*rawMsg) []byte { return sink32 })},
	},
}

type grpcServer struct {
	srv *grpc.Server
	lis net.Listener
}

func newGRPCServer(srvConfig) (serverImpl, error) {
	lis, err := listenTCP()
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(grpcMaxMsg), grpc.MaxSendMsgSize(grpcMaxMsg))
	srv.RegisterService(&grpcDesc, struct{}{})
	go srv.Serve(lis)
	return &grpcServer{srv: srv, lis: lis}, nil
}

func (s *grpcServer) addr() string { return s.lis.Addr().String() }
func (s *grpcServer) close()       { s.srv.Stop() }
func (s *grpcServer) control(args []string) (string, error) {
	return "", fmt.Errorf("unknown command %q", args[0])
}

type grpcClient struct{ conn *grpc.ClientConn }

func newGRPCClient(addr string) (client, error) {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype(grpcRawCodec{}.Name()),
			grpc.MaxCallRecvMsgSize(grpcMaxMsg), grpc.MaxCallSendMsgSize(grpcMaxMsg)))
	if err != nil {
		return nil, err
	}
	return &grpcClient{conn: conn}, nil
}

func (c *grpcClient) close() { c.conn.Close() }

func (c *grpcClient) run(p point, m *meter) error {
	method := "/erpcbench.Bench/Echo"
	if p.resp != p.size {
		method = "/erpcbench.Bench/Sink"
	}
	ctx := context.Background()
	return runGoroutines(p, m, func(_ int, req []byte, resp *rawMsg) error {
		return c.conn.Invoke(ctx, method, &rawMsg{b: req}, resp)
	})
}
