package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/erpc-go/erpc/examples/greeter/greeterpb"
)

// ListGreeted streams a reply per name greeted so far that starts with
// req's prefix, in name order, written for gRPC: headers and trailers
// with grpc's functions, a gRPC status at the end when none matched.
func (g *Greeter) ListGreeted(req *greeterpb.ListGreetedRequest, s grpc.ServerStreamingServer[greeterpb.HelloReply]) error {
	g.mu.Lock()
	known := len(g.seen)
	var names []string
	for name := range g.seen {
		if strings.HasPrefix(name, req.GetPrefix()) {
			names = append(names, name)
		}
	}
	counts := make(map[string]int64, len(names))
	for _, name := range names {
		counts[name] = g.seen[name].count
	}
	g.mu.Unlock()
	slices.Sort(names)

	if err := grpc.SetHeader(s.Context(), metadata.Pairs("greeter-names", strconv.Itoa(known))); err != nil {
		return err
	}
	for _, name := range names {
		msg := fmt.Sprintf("Hello, %s! (greeted %d times)", name, counts[name])
		if err := s.Send(&greeterpb.HelloReply{Message: msg}); err != nil {
			return err
		}
	}
	s.SetTrailer(metadata.Pairs("greeter-listed", strconv.Itoa(len(names))))
	if len(names) == 0 {
		return status.Errorf(codes.NotFound, "no name greeted starts with %q", req.GetPrefix())
	}
	return nil
}

// Chat greets each name as it arrives, as SayHello does; the first empty
// name ends it with SayHello's InvalidArgument status.
func (g *Greeter) Chat(s grpc.BidiStreamingServer[greeterpb.HelloRequest, greeterpb.HelloReply]) error {
	md, _ := metadata.FromIncomingContext(s.Context())
	if err := s.SendHeader(metadata.Pairs("greeter-client", strings.Join(md.Get("client"), ","))); err != nil {
		return err
	}
	greeted := 0
	defer func() { s.SetTrailer(metadata.Pairs("greeter-greeted", strconv.Itoa(greeted))) }()
	for {
		req, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		reply, err := g.greet(req.GetName())
		if err != nil {
			return err
		}
		greeted++
		if err := s.Send(reply); err != nil {
			return err
		}
	}
}
