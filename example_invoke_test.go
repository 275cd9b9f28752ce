package erpc_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log"

	"github.com/erpc-go/erpc"
)

// AddReq and AddResp travel with the Binary codec: a type with
// MarshalBinary and UnmarshalBinary needs no serialization library.
type AddReq struct{ A, B int64 }

func (r *AddReq) MarshalBinary() ([]byte, error) {
	return binary.AppendVarint(binary.AppendVarint(nil, r.A), r.B), nil
}

func (r *AddReq) UnmarshalBinary(b []byte) error {
	a, n := binary.Varint(b)
	if n <= 0 {
		return errors.New("AddReq: bad A")
	}
	c, m := binary.Varint(b[n:])
	if m <= 0 {
		return errors.New("AddReq: bad B")
	}
	r.A, r.B = a, c
	return nil
}

type AddResp struct{ Sum int64 }

func (r *AddResp) MarshalBinary() ([]byte, error) { return binary.AppendVarint(nil, r.Sum), nil }

func (r *AddResp) UnmarshalBinary(b []byte) error {
	s, n := binary.Varint(b)
	if n <= 0 {
		return errors.New("AddResp: bad Sum")
	}
	r.Sum = s
	return nil
}

// A typed call: Invoke encodes the request, calls, and decodes the answer
// into a new *AddResp. A handler's error reaches the caller with its code.
func ExampleInvoke() {
	srv := erpc.NewServer()
	err := erpc.Register(srv, "Add", func(ctx context.Context, req *AddReq) (*AddResp, error) {
		if req.A < 0 || req.B < 0 {
			return nil, erpc.Errorf(erpc.InvalidArgument, "Add takes no negative numbers")
		}
		return &AddResp{Sum: req.A + req.B}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	ep, err := srv.Listen("mem://adder")
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()

	ctx := context.Background()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	sum, err := erpc.Invoke[AddResp](ctx, s, "Add", &AddReq{A: 1, B: 2})
	fmt.Println(sum.Sum, err)

	_, err = erpc.Invoke[AddResp](ctx, s, "Add", &AddReq{A: -1, B: 2})
	fmt.Println(erpc.CodeOf(err), erpc.NotExecuted(err))
	// Output:
	// 3 <nil>
	// InvalidArgument false
}
