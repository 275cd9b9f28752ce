package erpc

import (
	"context"
	"fmt"

	"github.com/erpc-go/erpc/codec"
)

// Register registers a typed handler on s: requests are decoded into a new
// *Req, and the *Resp it returns is encoded, with the codec the types call
// for (see package codec; protobuf messages need codec/protocodec
// imported). A request that does not decode is answered with
// InvalidArgument. The *Req is the handler's, decoded into memory of its
// own: it stays valid after the answer, even when a server interceptor
// answers before the handler returns (see UnaryServerInterceptor).
//
//	err := erpc.Register(srv, "Add", func(ctx context.Context, req *AddReq) (*AddResp, error) {
//		return &AddResp{Sum: req.A + req.B}, nil
//	})
//
// Where the codec names its types (protobuf), the method's ID on the wire
// includes the request and response type names: a client calling with
// other types gets Unimplemented, naming the types, instead of a message
// decoded into the wrong type. Raw callers (Session.Call) reach it by its
// name as usual.
func Register[Req, Resp any](s *Server, method string, fn func(ctx context.Context, req *Req) (*Resp, error), opts ...HandlerOption) error {
	if fn == nil {
		return s.HandleRaw(method, nil, opts...)
	}
	var o handler
	for _, f := range opts {
		f(&o)
	}
	reqCodec, respCodec := o.codec, o.codec
	var err error
	if reqCodec == nil {
		if reqCodec, err = codec.For(any(new(Req))); err != nil {
			return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("register %q: request type: %v", method, err), Cause: err}
		}
		if respCodec, err = codec.For(any(new(Resp))); err != nil {
			return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("register %q: response type: %v", method, err), Cause: err}
		}
	}
	info := &UnaryServerInfo{Method: method}
	next := func(ctx context.Context, req any) (any, error) { return fn(ctx, req.(*Req)) }
	h := &handler{name: method, wantsCtx: true, info: MethodInfo{
		RequestType: typeName(reqCodec, new(Req)), ResponseType: typeName(respCodec, new(Resp)), Codec: reqCodec.Name()},
		run: func(r Request) {
			req := new(Req)
			if err := reqCodec.Unmarshal(r.runData(), req); err != nil {
				// fn never sees it: a refusal (NotExecuted)
				_ = r.answer(uint8(InvalidArgument), refusalPayload(Errorf(InvalidArgument, "decode the %s request of %q: %v", reqCodec.Name(), method, err)), true)
				return
			}
			var resp *Resp
			var err error
			if s.intercept == nil {
				resp, err = fn(r.runContext(), req)
			} else {
				var out any
				out, err = s.intercept(r.runContext(), req, info, next)
				resp, _ = out.(*Resp)
			}
			if err != nil {
				r.RespondError(err)
				return
			}
			if resp == nil {
				resp = new(Resp)
			}
			var buf []byte
			if sz, ok := respCodec.(codec.Sizer); ok {
				buf = r.runBuffer(sz.Size(resp))[:0]
			}
			b, err := respCodec.Marshal(buf, resp)
			if err != nil {
				r.RespondError(Errorf(Internal, "encode the %s response of %q: %v", respCodec.Name(), method, err))
				return
			}
			r.respondOwned(b) // the codec's output: ours, no copy needed
		}}
	for _, o := range opts {
		o(h)
	}
	return s.register(h, typedID(method, reqCodec, new(Req), respCodec, new(Resp)))
}

// Invoke calls a typed method over c, a Session or a Client: it encodes
// req, makes the call as Call does, and decodes the response into a new
// *Resp.
//
//	sum, err := erpc.Invoke[AddResp](ctx, s, "Add", &AddReq{A: 1, B: 2})
func Invoke[Resp, Req any](ctx context.Context, c Conn, method string, req *Req, opts ...CallOption) (*Resp, error) {
	var o callOptions
	if len(opts) > 0 {
		o = callOptionsOf(opts)
		ctx = o.withSink(ctx)
		if o.hasHashKey {
			ctx = ContextWithHashKey(ctx, o.hashKey)
		}
	}
	resp := new(Resp)
	reqCodec, respCodec := o.codec, o.codec
	if reqCodec == nil {
		var err error
		if reqCodec, err = codec.For(any(req)); err != nil {
			return nil, notRun(&Error{Code: InvalidArgument, Msg: fmt.Sprintf("call %q: request type: %v", method, err), Cause: err})
		}
		if respCodec, err = codec.For(any(resp)); err != nil {
			return nil, notRun(&Error{Code: InvalidArgument, Msg: fmt.Sprintf("call %q: response type: %v", method, err), Cause: err})
		}
	}
	m := typedMethodOf(method, reqCodec, req, respCodec, resp)
	if err := c.invoke(ctx, m, req, resp, reqCodec, respCodec); err != nil {
		return nil, err
	}
	return resp, nil
}

// invoke makes one typed call on the session: through its endpoint's
// client interceptors, if any, then encoded and sent.
func (s *Session) invoke(ctx context.Context, m typedMethod, req, resp any, reqCodec, respCodec codec.Codec) error {
	if icpt := s.ep.clientIntercept; icpt != nil {
		return s.invokeIntercepted(ctx, icpt, m, req, resp, reqCodec, respCodec)
	}
	b, err := reqCodec.Marshal(nil, req)
	if err != nil {
		return notRun(&Error{Code: InvalidArgument, Msg: fmt.Sprintf("call %q: encode the request: %v", m.name, err), Cause: err})
	}
	return s.invokeRaw(ctx, m, b, resp, respCodec)
}

func callOptionsOf(opts []CallOption) callOptions {
	var o callOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// invokeIntercepted is Invoke through the client interceptors (apart, so
// that Invoke without them allocates no closure).
func (s *Session) invokeIntercepted(ctx context.Context, icpt UnaryClientInterceptor, m typedMethod, req, resp any, reqCodec, respCodec codec.Codec) error {
	return icpt(ctx, m.name, req, resp, s, func(ctx context.Context, method string, rq, rs any) error {
		b, err := reqCodec.Marshal(nil, rq)
		if err != nil {
			return notRun(&Error{Code: InvalidArgument, Msg: fmt.Sprintf("call %q: encode the request: %v", method, err), Cause: err})
		}
		return s.invokeRaw(ctx, m, b, rs, respCodec)
	})
}

// invokeRaw makes a typed call's request b and decodes the answer into
// resp.
func (s *Session) invokeRaw(ctx context.Context, m typedMethod, b []byte, resp any, respCodec codec.Codec) error {
	data, err := s.callStats(ctx, m.name, m.id, b, nil)
	if err != nil {
		// The server has no such method (its refusal never ran), not a
		// handler that answered Unimplemented with a message of its own.
		if e, ok := err.(*Error); ok && e.Code == Unimplemented && m.typed && NotExecuted(e) {
			e.Msg += fmt.Sprintf(" taking %s and returning %s (a method of that name with other types does not match)",
				m.req, m.resp)
		}
		return err
	}
	if err := respCodec.Unmarshal(data, resp); err != nil {
		return &Error{Code: Internal, Msg: fmt.Sprintf("call %q: decode the response: %v", m.name, err), Cause: err}
	}
	return nil
}

// typedID is a typed method's ID on the wire: its name's, plus its types'
// names where the codecs give them.
func typedID(method string, reqCodec codec.Codec, req any, respCodec codec.Codec, resp any) uint32 {
	return typedIDOf(method, typeName(reqCodec, req), typeName(respCodec, resp))
}

func typedIDOf(method, req, resp string) uint32 {
	if req == "" && resp == "" {
		return methodID(method)
	}
	return methodID(method + "\x00" + req + "\x00" + resp)
}

func typeName(c codec.Codec, v any) string {
	if n, ok := c.(codec.TypeNamer); ok {
		return n.TypeName(v)
	}
	return ""
}

// CallOption configures one Invoke.
type CallOption func(*callOptions)

type callOptions struct {
	codec           codec.Codec
	header, trailer *Metadata // Header, Trailer (respmeta_call.go)
	hashKey         string    // WithHashKey (client_options.go)
	hasHashKey      bool
}

// WithCallCodec makes Invoke encode the request and decode the response
// with c instead of the codec their types call for; the handler must use
// the same (WithCodec).
func WithCallCodec(c codec.Codec) CallOption { return func(o *callOptions) { o.codec = c } }
