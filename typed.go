package erpc

import (
	"context"

	"github.com/erpc-go/erpc/codec"
)

// Register registers a typed handler: requests are decoded into a new
// *Req, and the *Resp it returns is encoded, with the codec the types call
// for (see package codec). A request that does not decode is answered with
// InvalidArgument.
//
//	erpc.Register(ep, "Add", func(ctx context.Context, req *AddReq) (*AddResp, error) {
//		return &AddResp{Sum: req.A + req.B}, nil
//	})
func Register[Req, Resp any](ep *Endpoint, method string, fn func(ctx context.Context, req *Req) (*Resp, error), opts ...HandlerOption) error {
	reqCodec, err := codec.For(any(new(Req)))
	if err != nil {
		return err
	}
	respCodec, err := codec.For(any(new(Resp)))
	if err != nil {
		return err
	}
	return ep.register(method, func(r *Request) {
		req := new(Req)
		if err := reqCodec.Unmarshal(r.Data(), req); err != nil {
			r.RespondError(Errorf(InvalidArgument, "decode %s request: %v", reqCodec.Name(), err))
			return
		}
		resp, err := fn(r.Context(), req)
		if err != nil {
			r.RespondError(err)
			return
		}
		if resp == nil {
			resp = new(Resp)
		}
		b, err := respCodec.Marshal(nil, resp)
		if err != nil {
			r.RespondError(Errorf(Internal, "encode %s response: %v", respCodec.Name(), err))
			return
		}
		r.Respond(b)
	}, opts)
}

// Invoke calls a typed method: it encodes req, makes the call as
// Session.Call does, and decodes the response into a new *Resp.
//
//	sum, err := erpc.Invoke[AddResp](ctx, s, "Add", &AddReq{A: 1, B: 2})
func Invoke[Resp, Req any](ctx context.Context, s *Session, method string, req *Req) (*Resp, error) {
	reqCodec, err := codec.For(any(req))
	if err != nil {
		return nil, &Error{Code: InvalidArgument, Msg: err.Error(), Cause: err}
	}
	resp := new(Resp)
	respCodec, err := codec.For(any(resp))
	if err != nil {
		return nil, &Error{Code: InvalidArgument, Msg: err.Error(), Cause: err}
	}
	b, err := reqCodec.Marshal(nil, req)
	if err != nil {
		return nil, &Error{Code: InvalidArgument, Msg: "encode request: " + err.Error(), Cause: err}
	}
	data, err := s.Call(ctx, method, b, nil)
	if err != nil {
		return nil, err
	}
	if err := respCodec.Unmarshal(data, resp); err != nil {
		return nil, &Error{Code: Internal, Msg: "decode response: " + err.Error(), Cause: err}
	}
	return resp, nil
}
