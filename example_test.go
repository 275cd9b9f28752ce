package erpc_test

import (
	"context"
	"fmt"
	"log"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
	_ "github.com/erpc-go/erpc/codec/protocodec" // protobuf messages in Register and Invoke
)

// The quickstart of the README, on the in-memory network.
func Example() {
	srv := erpc.NewServer()
	srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) {
		return req, nil
	})
	ep, err := srv.Listen("mem://example-server")
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()

	ctx := context.Background()
	s, err := erpc.Dial(ctx, "mem://example-server")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	resp, err := s.Call(ctx, "Echo", []byte("hello"), nil)
	fmt.Println(string(resp), err)
	// Output: hello <nil>
}

func ExampleRegister() {
	srv := erpc.NewServer()
	err := erpc.Register(srv, "Greet", func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return wrapperspb.String("hello, " + req.GetValue()), nil
	})
	if err != nil {
		log.Fatal(err)
	}
	ep, err := srv.Listen("mem://greeter")
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()

	ctx := context.Background()
	s, err := erpc.Dial(ctx, "mem://greeter")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	g, err := erpc.Invoke[wrapperspb.StringValue](ctx, s, "Greet", wrapperspb.String("erpc"))
	fmt.Println(g.GetValue(), err)
	// Output: hello, erpc <nil>
}

// A HandleRaw handler answers with memory of the endpoint's: the fastest
// path, with no allocation and no copy.
func ExampleServer_HandleRaw() {
	srv := erpc.NewServer()
	srv.HandleRaw("Upper", func(r erpc.Request) {
		out := r.ResponseBuffer(len(r.Data()))
		for i, c := range r.Data() {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out[i] = c
		}
		r.Respond(out)
	})
	ep, err := srv.Listen("mem://upper")
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()

	ctx := context.Background()
	s, err := erpc.Dial(ctx, "mem://upper")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	resp, err := s.Call(ctx, "Upper", []byte("loud"), nil)
	fmt.Println(string(resp), err)
	// Output: LOUD <nil>
}

func ExampleSession_Go() {
	srv := erpc.NewServer()
	srv.Handle("Double", func(ctx context.Context, req []byte) ([]byte, error) {
		return append(req, req...), nil
	})
	ep, err := srv.Listen("mem://async")
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	s, err := erpc.Dial(context.Background(), "mem://async")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	done := make(chan string, 1) // a continuation must not block
	s.Go("Double", []byte("ab"), nil, func(resp []byte, err error) {
		done <- string(resp) // runs on the endpoint's event loop
	})
	fmt.Println(<-done)
	// Output: abab
}
