package main

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/cmd/erpc/internal/testpb"
)

// The test server's streams: erpc.clitest.v1.Streams, one method of each
// shape, with the messages of shop.proto, served by hand with
// HandleStream as generated code would serve them; and Lines, a stream
// of raw bytes no descriptor describes.

// streamsCanceled counts the server's stream handlers whose stream ended
// under them (the client canceled, the deadline passed, the client's
// session ended); the method StreamsCanceled reports it.
var streamsCanceled atomic.Int64

// endedUnder counts err if it is the end of the stream under its handler.
// The command cancels a stream and exits: its session's close may reach
// the server before the cancel does, and the handler then sees
// Unavailable ("the client's session ended"), its context canceled a
// moment later (2 of 12 runs of TestStreamBadInputMidway did).
func endedUnder(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil, erpc.CodeOf(err) == erpc.Canceled, erpc.CodeOf(err) == erpc.DeadlineExceeded,
		erpc.CodeOf(err) == erpc.Unavailable:
		streamsCanceled.Add(1)
	}
	return err
}

func registerStreams(srv *erpc.Server) error {
	if err := registerStreamsProto(); err != nil {
		return err
	}
	handlers := map[string]erpc.StreamHandler{
		// Count(WaitRequest) returns (stream OrderReply): millis
		// replies; its headers and trailers say how many; metadata
		// x-fail: CODE ends it with that status after them.
		"/erpc.clitest.v1.Streams/Count": func(s erpc.ServerStream) error {
			var req testpb.WaitRequest
			if err := recvProto(s, &req); err != nil {
				return err
			}
			n := strconv.FormatInt(req.GetMillis(), 10)
			s.SetHeader(erpc.Pairs("x-count", n))
			for i := range req.GetMillis() {
				if err := sendProto(s, &testpb.OrderReply{Id: "n-" + strconv.FormatInt(i+1, 10), TotalItems: int32(i + 1)}); err != nil {
					return endedUnder(s.Context(), err)
				}
			}
			s.SetTrailer(erpc.Pairs("x-sent", n))
			md, _ := erpc.IncomingMetadata(s.Context())
			if code, err := strconv.Atoi(md.Get("x-fail")); err == nil {
				return erpc.Errorf(erpc.Code(code), "failed after %s replies", n)
			}
			return nil
		},
		// Forever(WaitRequest) returns (stream Caller): one reply, then
		// nothing until the stream ends under it.
		"/erpc.clitest.v1.Streams/Forever": func(s erpc.ServerStream) error {
			var req testpb.WaitRequest
			if err := recvProto(s, &req); err != nil {
				return err
			}
			if err := sendProto(s, &testpb.Caller{DeadlineMillis: 1}); err != nil {
				return endedUnder(s.Context(), err)
			}
			<-s.Context().Done()
			return endedUnder(s.Context(), s.Context().Err())
		},
		// Sum(stream OrderRequest) returns (OrderReply): the customers
		// joined by "+", and the quantities summed.
		"/erpc.clitest.v1.Streams/Sum": func(s erpc.ServerStream) error {
			var names []string
			var total int32
			for {
				var req testpb.OrderRequest
				err := recvProto(s, &req)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return endedUnder(s.Context(), err)
				}
				names = append(names, req.GetCustomer())
				for _, it := range req.GetItems() {
					total += it.GetQuantity()
				}
			}
			return sendProto(s, &testpb.OrderReply{Id: strings.Join(names, "+"), TotalItems: total})
		},
		// Chat(stream CancelRequest) returns (stream OrderError): each
		// request answered at once.
		"/erpc.clitest.v1.Streams/Chat": func(s erpc.ServerStream) error {
			for {
				var req testpb.CancelRequest
				err := recvProto(s, &req)
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return endedUnder(s.Context(), err)
				}
				if err := sendProto(s, &testpb.OrderError{Id: req.GetId(), Reason: "echo"}); err != nil {
					return endedUnder(s.Context(), err)
				}
			}
		},
		// Lines: each message back, as it is.
		"Lines": func(s erpc.ServerStream) error {
			for {
				b, err := s.Recv()
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return endedUnder(s.Context(), err)
				}
				if err := s.Send(b); err != nil {
					return endedUnder(s.Context(), err)
				}
			}
		},
	}
	for name, h := range handlers {
		if err := srv.HandleStream(name, h); err != nil {
			return err
		}
	}
	return srv.Handle("StreamsCanceled", func(ctx context.Context, _ []byte) ([]byte, error) {
		return []byte(strconv.FormatInt(streamsCanceled.Load(), 10)), nil
	})
}

func recvProto(s erpc.ServerStream, m proto.Message) error {
	b, err := s.Recv()
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, m)
}

func sendProto(s erpc.ServerStream, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	return s.Send(b)
}

// registerStreamsProto adds erpc/clitest/v1/streams.proto to the protobuf
// registry, as a generated package of it would.
func registerStreamsProto() error {
	str := func(s string) *string { return &s }
	yes := true
	rpc := func(name, in, out string, client, server bool) *descriptorpb.MethodDescriptorProto {
		m := &descriptorpb.MethodDescriptorProto{Name: str(name), InputType: str(".erpc.clitest.v1." + in), OutputType: str(".erpc.clitest.v1." + out)}
		if client {
			m.ClientStreaming = &yes
		}
		if server {
			m.ServerStreaming = &yes
		}
		return m
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: str("erpc/clitest/v1/streams.proto"), Package: str("erpc.clitest.v1"), Syntax: str("proto3"),
		Dependency: []string{"erpc/clitest/v1/shop.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: str("Streams"), Method: []*descriptorpb.MethodDescriptorProto{
			rpc("Count", "WaitRequest", "OrderReply", false, true),
			rpc("Forever", "WaitRequest", "Caller", false, true),
			rpc("Sum", "OrderRequest", "OrderReply", true, false),
			rpc("Chat", "CancelRequest", "OrderError", true, true),
		}}},
	}, protoregistry.GlobalFiles)
	if err != nil {
		return err
	}
	return protoregistry.GlobalFiles.RegisterFile(fd)
}
