package systems

import (
	"context"
	"fmt"
	"math"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
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

func newGRPCServer(proc.Config) (proc.Impl, error) { return startGRPCServer() }

// newGRPCTLSServer is grpc-tls's: gRPC over TLS 1.3 with a self-signed
// certificate (tlscert.go).
func newGRPCTLSServer(proc.Config) (proc.Impl, error) {
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	s, err := startGRPCServer(grpc.Creds(credentials.NewTLS(serverTLS(cert))))
	if err != nil {
		return nil, err
	}
	return withCert{s, cert}, nil
}

func startGRPCServer(opts ...grpc.ServerOption) (*grpcServer, error) {
	lis, err := ListenTCP()
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(GRPCMaxMsg), grpc.MaxSendMsgSize(GRPCMaxMsg))...)
	srv.RegisterService(&GRPCDesc, struct{}{})
	go srv.Serve(lis)
	return &grpcServer{srv: srv, lis: lis}, nil
}

func (s *grpcServer) Addr() string { return s.lis.Addr().String() }
func (s *grpcServer) Close()       { s.srv.Stop() }
func (s *grpcServer) Control(args []string) (string, error) {
	return "", fmt.Errorf("unknown command %q", args[0])
}

type GRPCClient struct {
	Conn  *grpc.ClientConn
	addr  string
	creds credentials.TransportCredentials
}

func newGRPCClient(addr string) (meter.Client, error) {
	return newGRPCClientCreds(addr, insecure.NewCredentials())
}

// newGRPCTLSClient is grpc-tls's client, trusting srv's certificate.
func newGRPCTLSClient(srv *proc.Server) (meter.Client, error) {
	cfg, err := clientTLS(srv)
	if err != nil {
		return nil, err
	}
	return newGRPCClientCreds(srv.Addr, credentials.NewTLS(cfg))
}

func newGRPCClientCreds(addr string, creds credentials.TransportCredentials) (*GRPCClient, error) {
	conn, err := dialGRPC(addr, creds)
	if err != nil {
		return nil, err
	}
	return &GRPCClient{Conn: conn, addr: addr, creds: creds}, nil
}

func dialGRPC(addr string, creds credentials.TransportCredentials) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype(GRPCRawCodec{}.Name()),
			grpc.MaxCallRecvMsgSize(GRPCMaxMsg), grpc.MaxCallSendMsgSize(GRPCMaxMsg)))
}

// Handshake opens a fresh connection (gRPC connects on the first call)
// and times it to the first call's answer (Handshaker).
func (c *GRPCClient) Handshake(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	conn, err := dialGRPC(c.addr, c.creds)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var resp RawMsg
	err = conn.Invoke(ctx, "/erpcbench.Bench/Echo", &RawMsg{B: handshakeReq}, &resp)
	return time.Since(t0), err
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
