package erpcgrpc

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/erpc-go/erpc"
)

// ClientStream is an erpc stream as a gRPC client sees it: one value is a
// grpc.ServerStreamingClient[Res], a grpc.ClientStreamingClient[Req, Res]
// and a grpc.BidiStreamingClient[Req, Res].
type ClientStream[Req, Res any] struct {
	cs              erpc.ClientStream
	header, trailer *metadata.MD // grpc.Header and grpc.Trailer options, set at the end
}

// OpenStream opens a stream to method on s (a Session or a Client) for a gRPC-style call: ctx's
// metadata, grpc's outgoing metadata included, is sent (see CallContext),
// and the grpc.Header and grpc.Trailer options among opts receive the
// stream's headers and trailers when it ends (when Recv or CloseAndRecv
// returns an error or io.EOF), as on gRPC. Other options are ignored.
func OpenStream[Req, Res any](ctx context.Context, s erpc.Conn, method string, opts ...grpc.CallOption) (*ClientStream[Req, Res], error) {
	cs, err := s.NewStream(CallContext(ctx), method)
	if err != nil {
		return nil, StatusError(err)
	}
	c := &ClientStream[Req, Res]{cs: cs}
	h, t := callOptionMetadata(opts)
	c.header, c.trailer = (*metadata.MD)(h), (*metadata.MD)(t)
	return c, nil
}

// OpenServerStream opens a server-streaming call: OpenStream, then in is
// sent and the client's side closed.
func OpenServerStream[Req, Res any](ctx context.Context, s erpc.Conn, method string, in *Req, opts ...grpc.CallOption) (*ClientStream[Req, Res], error) {
	c, err := OpenStream[Req, Res](ctx, s, method, opts...)
	if err != nil {
		return nil, err
	}
	// io.EOF: the handler has ended already; Recv gives its status.
	if err := c.Send(in); err != nil && err != io.EOF {
		return nil, err
	}
	if err := c.CloseSend(); err != nil {
		return nil, StatusError(err)
	}
	return c, nil
}

func (c *ClientStream[Req, Res]) Context() context.Context { return c.cs.Context() }

// Header waits for the response headers.
func (c *ClientStream[Req, Res]) Header() (metadata.MD, error) {
	md, err := c.cs.Header()
	return metadata.MD(md), StatusError(err)
}

// Trailer is the trailers, once Recv has returned an error or io.EOF.
func (c *ClientStream[Req, Res]) Trailer() metadata.MD { return metadata.MD(c.cs.Trailer()) }

// CloseSend closes the client's side.
func (c *ClientStream[Req, Res]) CloseSend() error { return StatusError(c.cs.CloseSend()) }

// SendMsg encodes and sends m; io.EOF if the handler has ended the stream
// (RecvMsg then gives its status).
func (c *ClientStream[Req, Res]) SendMsg(m any) error { return sendMsg(c.cs.Send, m) }

// RecvMsg receives the handler's next message into m: io.EOF when the
// handler returned nil and everything was read, its status error
// otherwise.
func (c *ClientStream[Req, Res]) RecvMsg(m any) error {
	err := recvMsg(c.cs.Recv, m)
	if err != nil {
		c.ended()
	}
	return err
}

// ended fills the grpc.Header and grpc.Trailer options' metadata.
func (c *ClientStream[Req, Res]) ended() {
	if c.header != nil {
		md, _ := c.cs.Header()
		*c.header = metadata.MD(md)
	}
	if c.trailer != nil {
		*c.trailer = metadata.MD(c.cs.Trailer())
	}
}

// Send sends a request message.
func (c *ClientStream[Req, Res]) Send(m *Req) error { return c.SendMsg(m) }

// Recv receives a response message.
func (c *ClientStream[Req, Res]) Recv() (*Res, error) {
	m := new(Res)
	if err := c.RecvMsg(m); err != nil {
		return nil, err
	}
	return m, nil
}

// CloseAndRecv closes the client's side and receives a client-streaming
// call's one response, and the stream's end.
func (c *ClientStream[Req, Res]) CloseAndRecv() (*Res, error) {
	if err := c.CloseSend(); err != nil {
		return nil, err
	}
	m, err := c.Recv()
	if err == io.EOF {
		return nil, ToGRPC(erpc.Errorf(erpc.Internal, "%s: the stream ended without a response", c.cs.Method()))
	}
	if err != nil {
		return nil, err
	}
	if err := c.RecvMsg(new(Res)); err == nil {
		return nil, ToGRPC(erpc.Errorf(erpc.Internal, "%s: more than one response", c.cs.Method()))
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	return m, nil
}
