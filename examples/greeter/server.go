package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/examples/greeter/greeterpb"
)

// Greeter is the one implementation of greeter.v1.Greeter. Its methods
// have the signatures both generated server interfaces ask for, so the
// same value registers on a grpc.Server (greeterpb.RegisterGreeterServer)
// and on an erpc.Server (greeterpb.RegisterGreeterERPCServer).
//
// Its errors come in both styles on purpose: SayHello returns gRPC
// statuses, LastGreeted *erpc.Errors. contrib/grpc's interceptors, one on
// each server, make both reach callers of either protocol with their code,
// message and details.
//
// Its streaming methods (streams.go) take grpc-go's stream types and use
// grpc's metadata functions: the erpc code is generated with
// grpc_compat=true, which adapts erpc's streams to them.
type Greeter struct {
	// By value: gRPC's server interface requires it (its must-embed
	// method); erpc's requires nothing, and accepts it as it is.
	greeterpb.UnimplementedGreeterServer

	now func() time.Time

	mu   sync.Mutex
	seen map[string]*seen
}

type seen struct {
	at    time.Time
	count int64
}

var (
	_ greeterpb.GreeterServer     = (*Greeter)(nil)
	_ greeterpb.GreeterERPCServer = (*Greeter)(nil)
)

// NewGreeter returns a greeter that has greeted no one.
func NewGreeter() *Greeter {
	return &Greeter{now: time.Now, seen: map[string]*seen{}}
}

// SayHello greets req's name and remembers it.
func (g *Greeter) SayHello(ctx context.Context, req *greeterpb.HelloRequest) (*greeterpb.HelloReply, error) {
	return g.greet(req.GetName())
}

// greet greets name and remembers it; an empty name is InvalidArgument,
// with a BadRequest detail.
func (g *Greeter) greet(name string) (*greeterpb.HelloReply, error) {
	if name == "" {
		st, err := status.New(codes.InvalidArgument, "say hello to whom? the name is empty").WithDetails(
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
				{Field: "name", Description: "must not be empty"},
			}})
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return nil, st.Err()
	}
	g.mu.Lock()
	s := g.seen[name]
	if s == nil {
		s = new(seen)
		g.seen[name] = s
	}
	s.at = g.now()
	s.count++
	g.mu.Unlock()
	return &greeterpb.HelloReply{Message: fmt.Sprintf("Hello, %s!", name)}, nil
}

// LastGreeted tells when SayHello last greeted req's name.
func (g *Greeter) LastGreeted(ctx context.Context, req *greeterpb.LastGreetedRequest) (*greeterpb.LastGreetedReply, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.seen[req.GetName()]
	if s == nil {
		return nil, erpc.Errorf(erpc.NotFound, "%q was never greeted", req.GetName())
	}
	return &greeterpb.LastGreetedReply{At: timestamppb.New(s.at), Count: s.count}, nil
}
