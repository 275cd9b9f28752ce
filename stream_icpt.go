package erpc

import "context"

// StreamServerInfo describes the stream a server stream interceptor wraps.
type StreamServerInfo struct {
	Method string
}

// StreamServerInterceptor wraps a stream handler, as gRPC's stream
// interceptors do: it may wrap the stream (to change its Context, or
// watch its messages), call next (or not), and inspect or change the
// status next returns. The stream's handler goroutine runs it.
type StreamServerInterceptor func(s ServerStream, info *StreamServerInfo, next StreamHandler) error

// ChainStreamInterceptor installs server stream interceptors; the first
// is the outermost. Several options add to the chain in order.
func ChainStreamInterceptor(is ...StreamServerInterceptor) ServerOption {
	return func(s *Server) { s.streamInterceptors = append(s.streamInterceptors, is...) }
}

// Streamer opens a stream: the rest of the client interceptor chain and
// then the session's own NewStream.
type Streamer func(ctx context.Context, method string) (ClientStream, error)

// StreamClientInterceptor wraps the opening of a stream: it may change
// the context (add metadata, say), open the stream with streamer (or not),
// and wrap the ClientStream it returns to watch its messages and end.
type StreamClientInterceptor func(ctx context.Context, method string, s *Session, streamer Streamer) (ClientStream, error)

// WithStreamClientInterceptors installs client stream interceptors on an
// endpoint's NewStream calls; the first is the outermost.
func WithStreamClientInterceptors(is ...StreamClientInterceptor) Option {
	return func(o *options) { o.streamInterceptors = append(o.streamInterceptors, is...) }
}

// chainStreamServer composes server stream interceptors, nil for none.
func chainStreamServer(is []StreamServerInterceptor) StreamServerInterceptor {
	switch len(is) {
	case 0:
		return nil
	case 1:
		return is[0]
	}
	return func(s ServerStream, info *StreamServerInfo, next StreamHandler) error {
		return is[0](s, info, chainStreamServerNext(is[1:], info, next))
	}
}

func chainStreamServerNext(is []StreamServerInterceptor, info *StreamServerInfo, final StreamHandler) StreamHandler {
	if len(is) == 0 {
		return final
	}
	return func(s ServerStream) error {
		return is[0](s, info, chainStreamServerNext(is[1:], info, final))
	}
}

// openIntercepted opens a stream through the client interceptors is.
func (s *Session) openIntercepted(ctx context.Context, is []StreamClientInterceptor, method string, final Streamer) (ClientStream, error) {
	if len(is) == 0 {
		return final(ctx, method)
	}
	return is[0](ctx, method, s, func(ctx context.Context, method string) (ClientStream, error) {
		return s.openIntercepted(ctx, is[1:], method, final)
	})
}
