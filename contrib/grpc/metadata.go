package erpcgrpc

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/erpc-go/erpc"
)

// Metadata the gRPC way over erpc. On the server, ServerMetadata makes
// grpc's own functions work in a handler served over erpc:
// metadata.FromIncomingContext reads the caller's metadata, and
// grpc.SetHeader, grpc.SendHeader and grpc.SetTrailer set the response's
// headers and trailers (erpc.SetHeader and so on), which reach an erpc
// caller with the answer, success or error. On the client, CallContext
// maps gRPC-style calls' metadata onto an erpc call: grpc's outgoing
// metadata (metadata.AppendToOutgoingContext) is sent, and the
// grpc.Header and grpc.Trailer call options receive the answer's.
//
// What differs from gRPC: erpc carries only the metadata the
// application sets. A handler served over gRPC also sees the transport's
// keys (":authority", "content-type", "user-agent", "grpc-*"), and a gRPC
// caller's headers include "content-type"; over erpc neither is there.
// Values are bytes on both ("-bin" keys are base64 on gRPC's wire and
// decoded on arrival; erpc sends any value as it is). On a unary call the
// headers travel with the answer, so grpc.SendHeader fixes them and sends
// nothing early. Call options other than grpc.Header and grpc.Trailer
// have no meaning over erpc and are ignored.

// ServerMetadata returns an erpc server interceptor that gives each
// handler a context on which grpc's metadata functions work (see
// ServerContext). Install it on a server whose implementation was written
// for gRPC:
//
//	esrv := erpc.NewServer(erpc.ChainUnaryInterceptor(erpcgrpc.ServerMetadata()))
func ServerMetadata() erpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *erpc.UnaryServerInfo, next erpc.UnaryHandler) (any, error) {
		return next(ServerContext(ctx, info.Method), req)
	}
}

// ServerContext returns an erpc handler's context ctx as gRPC's server
// code expects it: metadata.FromIncomingContext gives the caller's
// metadata (empty, and ok, when it sent none, as on a gRPC server), and a
// grpc.ServerTransportStream (grpc.ServerTransportStreamFromContext) maps
// grpc.SetHeader, grpc.SendHeader and grpc.SetTrailer onto erpc's and
// grpc.Method onto method.
func ServerContext(ctx context.Context, method string) context.Context {
	md, _ := erpc.IncomingMetadata(ctx)
	if md == nil {
		md = erpc.Metadata{}
	}
	ctx = metadata.NewIncomingContext(ctx, metadata.MD(md))
	return grpc.NewContextWithServerTransportStream(ctx, serverStream{ctx: ctx, method: method})
}

// serverStream is the grpc.ServerTransportStream of an erpc request.
type serverStream struct {
	ctx    context.Context
	method string
}

func (s serverStream) Method() string { return s.method }

func (s serverStream) SetHeader(md metadata.MD) error {
	return ToGRPC(erpc.SetHeader(s.ctx, erpc.Metadata(md)))
}

func (s serverStream) SendHeader(md metadata.MD) error {
	return ToGRPC(erpc.SendHeader(s.ctx, erpc.Metadata(md)))
}

func (s serverStream) SetTrailer(md metadata.MD) error {
	return ToGRPC(erpc.SetTrailer(s.ctx, erpc.Metadata(md)))
}

// CallContext returns ctx for an erpc call (Session.Call, erpc.Invoke, a
// generated client's method) made on behalf of a gRPC-style call with
// opts: the metadata of grpc's outgoing context (metadata.NewOutgoingContext,
// metadata.AppendToOutgoingContext) is sent beside erpc's own
// (erpc.NewOutgoingContext), and each grpc.Header and grpc.Trailer option
// receives the answer's headers or trailers (erpc.WithResponseMetadata);
// its metadata is set to nil first, so an answer without any leaves it
// nil. Other options are ignored. As with erpc.WithResponseMetadata, make
// one call with the returned context.
func CallContext(ctx context.Context, opts ...grpc.CallOption) context.Context {
	if gmd, ok := metadata.FromOutgoingContext(ctx); ok && len(gmd) > 0 {
		md, _ := erpc.OutgoingMetadata(ctx)
		md = md.Clone()
		for k, vs := range gmd {
			md[k] = append(md[k], vs...)
		}
		ctx = erpc.NewOutgoingContext(ctx, md)
	}
	header, trailer := callOptionMetadata(opts)
	if header == nil && trailer == nil {
		return ctx
	}
	for _, md := range []*erpc.Metadata{header, trailer} {
		if md != nil {
			*md = nil
		}
	}
	return erpc.WithResponseMetadata(ctx, header, trailer)
}

// callOptionMetadata finds the grpc.Header and grpc.Trailer options'
// metadata among opts.
func callOptionMetadata(opts []grpc.CallOption) (header, trailer *erpc.Metadata) {
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			header = (*erpc.Metadata)(o.HeaderAddr)
		case *grpc.HeaderCallOption:
			header = (*erpc.Metadata)(o.HeaderAddr)
		case grpc.TrailerCallOption:
			trailer = (*erpc.Metadata)(o.TrailerAddr)
		case *grpc.TrailerCallOption:
			trailer = (*erpc.Metadata)(o.TrailerAddr)
		}
	}
	return header, trailer
}

// ClientMetadata returns an erpc client interceptor that sends the
// metadata of grpc's outgoing context with each call, as CallContext
// does (without call options, which an interceptor does not see): for
// callers that set metadata the gRPC way and call through erpc clients.
func ClientMetadata() erpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, resp any, _ *erpc.Session, invoke erpc.UnaryInvoker) error {
		return invoke(CallContext(ctx), method, req, resp)
	}
}
