package erpcgrpc

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/codec"
)

// Streams the gRPC way over erpc. ServerStream and ClientStream adapt
// erpc's streams (erpc.ServerStream, erpc.ClientStream) to grpc-go's
// generic stream interfaces, so that a streaming method written for gRPC
// (Watch(*Req, grpc.ServerStreamingServer[Res]) error, and so on) serves
// erpc clients unchanged, and an erpc client has the shape of a gRPC
// client. protoc-gen-go-erpc's grpc_compat=true output uses them; code
// that registers streams by hand may too.
//
// Messages are encoded with erpc's codec for their type (package codec;
// protobuf messages need codec/protocodec imported, as the generated code
// does). Errors: io.EOF is io.EOF, as on gRPC; any other error of the
// erpc stream is returned with a GRPCStatus method (status.FromError and
// status.Code read its code, message and details) and still unwraps to
// its *erpc.Error.

// ServerStream is an erpc stream as a gRPC streaming handler sees it: one
// value is a grpc.ServerStreamingServer[Res], a
// grpc.ClientStreamingServer[Req, Res] and a grpc.BidiStreamingServer[Req,
// Res]. Its Context works with grpc's metadata functions as ServerContext
// does: metadata.FromIncomingContext gives the caller's metadata, and
// grpc.SetHeader, grpc.SendHeader and grpc.SetTrailer on it act on the
// stream, as the methods of the same names do.
type ServerStream[Req, Res any] struct {
	s   erpc.ServerStream
	ctx context.Context
}

// NewServerStream adapts s for a gRPC streaming handler.
func NewServerStream[Req, Res any](s erpc.ServerStream) *ServerStream[Req, Res] {
	md, _ := erpc.IncomingMetadata(s.Context())
	if md == nil {
		md = erpc.Metadata{}
	}
	ctx := metadata.NewIncomingContext(s.Context(), metadata.MD(md))
	ctx = grpc.NewContextWithServerTransportStream(ctx, streamTransport{s})
	return &ServerStream[Req, Res]{s: s, ctx: ctx}
}

// ServeServerStream serves one server-streaming call with fn, a gRPC
// server-streaming handler: it reads the request message, then calls fn
// with it and the stream. A client that sends no request gets
// InvalidArgument.
func ServeServerStream[Req, Res any](s erpc.ServerStream, fn func(*Req, grpc.ServerStreamingServer[Res]) error) error {
	st := NewServerStream[Req, Res](s)
	in, err := st.Recv()
	if errors.Is(err, io.EOF) {
		return erpc.Errorf(erpc.InvalidArgument, "%s: the client sent no request message", s.Method())
	}
	if err != nil {
		return err
	}
	return fn(in, st)
}

func (s *ServerStream[Req, Res]) Context() context.Context { return s.ctx }

// SetHeader adds md to the response headers, sent with the first message.
func (s *ServerStream[Req, Res]) SetHeader(md metadata.MD) error {
	return ToGRPC(s.s.SetHeader(erpc.Metadata(md)))
}

// SendHeader adds md to the response headers and sends them now.
func (s *ServerStream[Req, Res]) SendHeader(md metadata.MD) error {
	return ToGRPC(s.s.SendHeader(erpc.Metadata(md)))
}

// SetTrailer adds md to the trailers, sent with the handler's status.
func (s *ServerStream[Req, Res]) SetTrailer(md metadata.MD) { s.s.SetTrailer(erpc.Metadata(md)) }

// SendMsg encodes and sends m.
func (s *ServerStream[Req, Res]) SendMsg(m any) error { return sendMsg(s.s.Send, m) }

// RecvMsg receives the client's next message into m; io.EOF once the
// client has closed its side.
func (s *ServerStream[Req, Res]) RecvMsg(m any) error { return recvMsg(s.s.Recv, m) }

// Send sends a response message.
func (s *ServerStream[Req, Res]) Send(m *Res) error { return s.SendMsg(m) }

// SendAndClose sends a client-streaming call's response; the handler then
// returns nil, as on gRPC.
func (s *ServerStream[Req, Res]) SendAndClose(m *Res) error { return s.SendMsg(m) }

// Recv receives a request message.
func (s *ServerStream[Req, Res]) Recv() (*Req, error) {
	m := new(Req)
	if err := s.RecvMsg(m); err != nil {
		return nil, err
	}
	return m, nil
}

// streamTransport is the grpc.ServerTransportStream of an erpc stream, for
// grpc.SetHeader and the like on its context.
type streamTransport struct{ s erpc.ServerStream }

func (t streamTransport) Method() string { return t.s.Method() }
func (t streamTransport) SetHeader(md metadata.MD) error {
	return ToGRPC(t.s.SetHeader(erpc.Metadata(md)))
}
func (t streamTransport) SendHeader(md metadata.MD) error {
	return ToGRPC(t.s.SendHeader(erpc.Metadata(md)))
}
func (t streamTransport) SetTrailer(md metadata.MD) error {
	t.s.SetTrailer(erpc.Metadata(md))
	return nil
}

func sendMsg(send func([]byte) error, m any) error {
	c, err := codec.For(m)
	if err != nil {
		return ToGRPC(erpc.Errorf(erpc.Internal, "encode %T: %v", m, err))
	}
	b, err := c.Marshal(nil, m)
	if err != nil {
		return ToGRPC(erpc.Errorf(erpc.Internal, "encode %T: %v", m, err))
	}
	if err := send(b); err != nil {
		return StatusError(err)
	}
	return nil
}

func recvMsg(recv func() ([]byte, error), m any) error {
	b, err := recv()
	if err != nil {
		return StatusError(err)
	}
	c, err := codec.For(m)
	if err == nil {
		err = c.Unmarshal(b, m) // copies what it keeps: b is the stream's until the next Recv
	}
	if err != nil {
		return ToGRPC(erpc.Errorf(erpc.Internal, "decode %T: %v", m, err))
	}
	return nil
}

// StatusError returns err with a GRPCStatus method if it is an erpc error
// (an *erpc.Error in its chain) without one, so that grpc's
// status.FromError and status.Code read its code, message and details;
// the result still unwraps to err. nil, io.EOF and other errors are
// returned as they are.
func StatusError(err error) error {
	var e *erpc.Error
	if err == nil || err == io.EOF || !errors.As(err, &e) {
		return err
	}
	if _, ok := status.FromError(err); ok {
		return err // a status already
	}
	return &statusError{err: err, st: ToStatus(e)}
}
