package erpc_test

import (
	"context"
	"fmt"
	"log"

	"github.com/erpc-go/erpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The quickstart of the README, on the in-memory network.
func Example() {
	ep, err := erpc.Listen("mem://example-server")
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	ep.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) {
		return req, nil
	})

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

func ExampleInvoke() {
	ep, _ := erpc.Listen("mem://greeter")
	defer ep.Close()
	erpc.Register(ep, "Greet", func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return wrapperspb.String("hello, " + req.GetValue()), nil
	})

	ctx := context.Background()
	s, _ := erpc.Dial(ctx, "mem://greeter")
	defer s.Close()
	g, err := erpc.Invoke[wrapperspb.StringValue](ctx, s, "Greet", wrapperspb.String("erpc"))
	fmt.Println(g.GetValue(), err)
	// Output: hello, erpc <nil>
}

func ExampleSession_Go() {
	ep, _ := erpc.Listen("mem://async")
	defer ep.Close()
	ep.Handle("Double", func(ctx context.Context, req []byte) ([]byte, error) {
		return append(req, req...), nil
	})
	s, _ := erpc.Dial(context.Background(), "mem://async")
	defer s.Close()

	done := make(chan string, 1) // a continuation must not block
	s.Go("Double", []byte("ab"), nil, func(resp []byte, err error) {
		done <- string(resp) // runs on the endpoint's event loop
	})
	fmt.Println(<-done)
	// Output: abab
}
