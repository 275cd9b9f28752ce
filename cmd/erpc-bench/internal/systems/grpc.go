package systems

import (
	"context"
	"fmt"
	"math"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// gRPC with default settings, except message limits raised to carry 8 MiB,
// and a codec that passes bytes through (selected per call by content
// subtype), so protobuf's cost is not counted.

type GRPCRawCodec struct{}

func (GRPCRawCodec) Name() string { return "erpcbenchraw" }

func (GRPCRawCodec) Marshal(v any) ([]byte, error) { return v.(*RawMsg).B, nil }

func (GRPCRawCodec) Unmarshal(data []byte, v any) error {
	m := v.(*RawMsg)
	m.B = append(m.B[:0], data...)
	return nil
}

func init() { encoding.RegisterCodec(GRPCRawCodec{}) }

// GRPCMaxMsg is gRPC's message limit here: its largest (the default is
// 4 MiB, which would fail every call above it).
const GRPCMaxMsg = math.MaxInt32

func grpcHandler(want func(*RawMsg) []byte) grpc.MethodHandler {
	return func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(RawMsg)
		if err := dec(in); err != nil {
			return nil, err
		}
		return &RawMsg{B: want(in)}, nil
	}
}

var GRPCDesc = grpc.ServiceDesc{
	ServiceName: "erpcbench.Bench",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Echo", Handler: grpcHandler(func(m *RawMsg) []byte { return m.B })},
		{MethodName: "Sink", Handler: grpcHandler(func(*RawMsg) []byte { return sink32 })},
	},
}

type grpcServer struct {
	srv *grpc.Server
	lis net.Listener
}

func newGRPCServer(proc.Config) (proc.Impl, error) {
	lis, err := ListenTCP()
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(GRPCMaxMsg), grpc.MaxSendMsgSize(GRPCMaxMsg))
	srv.RegisterService(&GRPCDesc, struct{}{})
	go srv.Serve(lis)
	return &grpcServer{srv: srv, lis: lis}, nil
}

func (s *grpcServer) Addr() string { return s.lis.Addr().String() }
func (s *grpcServer) Close()       { s.srv.Stop() }
func (s *grpcServer) Control(args []string) (string, error) {
	return "", fmt.Errorf("unknown command %q", args[0])
}

type GRPCClient struct{ Conn *grpc.ClientConn }

func newGRPCClient(addr string) (meter.Client, error) {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype(GRPCRawCodec{}.Name()),
			grpc.MaxCallRecvMsgSize(GRPCMaxMsg), grpc.MaxCallSendMsgSize(GRPCMaxMsg)))
	if err != nil {
		return nil, err
	}
	return &GRPCClient{Conn: conn}, nil
}

func (c *GRPCClient) Close() { c.Conn.Close() }

func (c *GRPCClient) Run(p meter.Point, m *meter.Meter) error {
	method := "/erpcbench.Bench/Echo"
	if p.Resp != p.Size {
		method = "/erpcbench.Bench/Sink"
	}
	ctx := context.Background()
	return runGoroutines(p, m, func(_ int, req []byte, resp *RawMsg) error {
		return c.Conn.Invoke(ctx, method, &RawMsg{B: req}, resp)
	})
}
