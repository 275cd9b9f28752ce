package erpc_test

import (
	"context"
	"fmt"
	"log"

	"github.com/erpc-go/erpc"
)

// Metadata travels beside a request: the client puts it on the call's
// context, the handler reads it from its own.
func ExampleNewOutgoingContext() {
	srv := erpc.NewServer()
	srv.Handle("Hello", func(ctx context.Context, req []byte) ([]byte, error) {
		md, _ := erpc.IncomingMetadata(ctx)
		return fmt.Appendf(nil, "hello %s, request %s", req, md.Get("request-id")), nil
	})
	ep, err := srv.Listen("mem://metadata")
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()

	s, err := erpc.Dial(context.Background(), ep.Target())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ctx := erpc.NewOutgoingContext(context.Background(), erpc.Pairs("Request-ID", "42"))
	resp, err := s.Call(ctx, "Hello", []byte("ada"), nil)
	fmt.Println(string(resp), err)
	// Output: hello ada, request 42 <nil>
}

// A server interceptor that checks a token in the metadata and logs each
// call, and a client interceptor that adds the token to every call of its
// endpoint: the middleware of gRPC's unary interceptors, unchanged in shape.
func ExampleChainUnaryInterceptor() {
	auth := func(ctx context.Context, req any, info *erpc.UnaryServerInfo, next erpc.UnaryHandler) (any, error) {
		md, _ := erpc.IncomingMetadata(ctx)
		if md.Get("authorization") != "Bearer s3cret" {
			fmt.Println("server: refused", info.Method)
			return nil, erpc.Errorf(erpc.Unauthenticated, "no valid token")
		}
		resp, err := next(ctx, req)
		fmt.Println("server: served", info.Method, err)
		return resp, err
	}
	srv := erpc.NewServer(erpc.ChainUnaryInterceptor(auth))
	srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) { return req, nil })
	ep, err := srv.Listen("mem://interceptors")
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()

	withToken := func(ctx context.Context, method string, req, resp any, s *erpc.Session, invoke erpc.UnaryInvoker) error {
		ctx = erpc.AppendToOutgoingContext(ctx, "authorization", "Bearer s3cret")
		err := invoke(ctx, method, req, resp)
		fmt.Println("client: called", method, err)
		return err
	}
	ctx := context.Background()
	s, err := erpc.Dial(ctx, ep.Target(), erpc.WithUnaryClientInterceptors(withToken))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	resp, err := s.Call(ctx, "Echo", []byte("hi"), nil)
	fmt.Println(string(resp), err)

	anon, err := erpc.Dial(ctx, ep.Target()) // an endpoint without the client interceptor
	if err != nil {
		log.Fatal(err)
	}
	defer anon.Close()
	_, err = anon.Call(ctx, "Echo", []byte("hi"), nil)
	fmt.Println(erpc.CodeOf(err))
	// Output:
	// server: served Echo <nil>
	// client: called Echo <nil>
	// hi <nil>
	// server: refused Echo
	// Unauthenticated
}
