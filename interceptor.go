package erpc

import "context"

// Interceptors wrap calls the way gRPC's unary interceptors do, so the
// middleware a Go team already writes (auth, logging, retries, metrics)
// carries over. They see Handle and Register handlers and Call and Invoke
// calls; HandleRaw handlers and Session.Go calls are erpc's raw fast path,
// which only a StatsHandler sees. With none installed they cost nothing.

// UnaryServerInfo describes the method a server interceptor wraps.
type UnaryServerInfo struct {
	Method string
}

// UnaryHandler runs the rest of the chain and the handler: for a Handle
// handler req and the response are []byte, for a Register handler the
// typed request and response (pointers).
type UnaryHandler func(ctx context.Context, req any) (any, error)

// UnaryServerInterceptor wraps a handler: it may inspect or change the
// context and request, call next (or not), and inspect or change the
// response and error. It may also return before next returns (a timeout
// that runs next in a goroutine and gives up on it, say): the request is
// answered with what the interceptor returned, its context is canceled,
// and what next returns later is dropped. The handler keeps its request
// meanwhile: a Handle handler's req is a copy the endpoint never reuses
// (made only when the server has interceptors), and a Register handler's
// *Req was decoded into memory of its own (a codec keeps nothing of the
// bytes it decodes); both are valid until the handler returns.
type UnaryServerInterceptor func(ctx context.Context, req any, info *UnaryServerInfo, next UnaryHandler) (any, error)

// UnaryInvoker makes the call: for Session.Call req is []byte and resp a
// *[]byte it fills, for Invoke the typed request and response (pointers).
type UnaryInvoker func(ctx context.Context, method string, req, resp any) error

// UnaryClientInterceptor wraps a call: it may inspect or change the
// context (add metadata, say) and request, call invoke (or not, or more
// than once: a request erpc reports as failed may have run, so only retry
// what is safe to run twice), and inspect the response and error.
type UnaryClientInterceptor func(ctx context.Context, method string, req, resp any, s *Session, invoke UnaryInvoker) error

// ServerOption configures a Server.
type ServerOption func(*Server)

// ChainUnaryInterceptor installs server interceptors; the first is the
// outermost. Several options add to the chain in order.
func ChainUnaryInterceptor(is ...UnaryServerInterceptor) ServerOption {
	return func(s *Server) { s.interceptors = append(s.interceptors, is...) }
}

// WithUnaryClientInterceptors installs client interceptors on an
// endpoint's calls; the first is the outermost.
func WithUnaryClientInterceptors(is ...UnaryClientInterceptor) Option {
	return func(o *options) { o.clientInterceptors = append(o.clientInterceptors, is...) }
}

// chainServer composes interceptors into one, or nil for none.
func chainServer(is []UnaryServerInterceptor) UnaryServerInterceptor {
	switch len(is) {
	case 0:
		return nil
	case 1:
		return is[0]
	}
	return func(ctx context.Context, req any, info *UnaryServerInfo, next UnaryHandler) (any, error) {
		return is[0](ctx, req, info, chainServerNext(is[1:], info, next))
	}
}

func chainServerNext(is []UnaryServerInterceptor, info *UnaryServerInfo, final UnaryHandler) UnaryHandler {
	if len(is) == 0 {
		return final
	}
	return func(ctx context.Context, req any) (any, error) {
		return is[0](ctx, req, info, chainServerNext(is[1:], info, final))
	}
}

// chainClient composes client interceptors into one, or nil for none.
func chainClient(is []UnaryClientInterceptor) UnaryClientInterceptor {
	switch len(is) {
	case 0:
		return nil
	case 1:
		return is[0]
	}
	return func(ctx context.Context, method string, req, resp any, s *Session, invoke UnaryInvoker) error {
		return is[0](ctx, method, req, resp, s, chainClientNext(is[1:], s, invoke))
	}
}

func chainClientNext(is []UnaryClientInterceptor, s *Session, final UnaryInvoker) UnaryInvoker {
	if len(is) == 0 {
		return final
	}
	return func(ctx context.Context, method string, req, resp any) error {
		return is[0](ctx, method, req, resp, s, chainClientNext(is[1:], s, final))
	}
}
