package erpc

import (
	"context"

	"github.com/erpc-go/erpc/codec"
)

// Conn is what calls are made over: a Session (one server) or a Client
// (a fleet of replicas behind one target). Invoke, generated clients and
// the packages built on erpc take a Conn, so that code written for one
// server runs over many unchanged. It is sealed: only this package's
// types implement it.
type Conn interface {
	// Call sends req to method and waits for the response (see
	// Session.Call).
	Call(ctx context.Context, method string, req, resp []byte) ([]byte, error)
	// Go sends req to method and runs done with the outcome (see
	// Session.Go).
	Go(method string, req, resp []byte, done func(resp []byte, err error))
	// NewStream opens a stream to method (see Session.NewStream).
	NewStream(ctx context.Context, method string, opts ...StreamOption) (ClientStream, error)

	// invoke makes one typed call (Invoke).
	invoke(ctx context.Context, m typedMethod, req, resp any, reqCodec, respCodec codec.Codec) error
}

var (
	_ Conn = (*Session)(nil)
	_ Conn = (*Client)(nil)
)
