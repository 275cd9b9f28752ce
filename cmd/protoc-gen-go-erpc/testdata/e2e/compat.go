package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	compatv1 "example.com/erpctest/gen/compat/v1"
	"github.com/erpc-go/erpc"
)

// relay is written for gRPC only (grpc's stream types and metadata
// functions); generated with grpc_compat=true, it serves erpc unchanged,
// and the erpc client is a gRPC client.
type relay struct {
	compatv1.UnimplementedRelayServer
}

var (
	_ compatv1.RelayServer     = relay{}
	_ compatv1.RelayERPCServer = relay{}
	_ compatv1.RelayClient     = compatv1.NewRelayERPCClient(nil)
)

// seen is the caller's x-req metadata, as the handler reads it.
func seen(ctx context.Context) string {
	md, ok := metadata.FromIncomingContext(ctx)
	return fmt.Sprint(ok, md.Get("x-req"))
}

func (relay) Echo(ctx context.Context, in *compatv1.Note) (*compatv1.Note, error) {
	if err := grpc.SetHeader(ctx, metadata.Pairs("x-h", "echo "+seen(ctx))); err != nil {
		return nil, err
	}
	if err := grpc.SetTrailer(ctx, metadata.Pairs("x-t", "echo")); err != nil {
		return nil, err
	}
	if in.Text == "fail" {
		return nil, status.Error(codes.NotFound, "no echo")
	}
	return in, nil
}

func (relay) Count(in *compatv1.Note, s grpc.ServerStreamingServer[compatv1.Note]) error {
	if err := grpc.SetHeader(s.Context(), metadata.Pairs("x-h", "count "+seen(s.Context()))); err != nil {
		return err
	}
	for i := range in.Seq {
		if err := s.Send(&compatv1.Note{Text: in.Text, Seq: i}); err != nil {
			return err
		}
	}
	s.SetTrailer(metadata.Pairs("x-t", "count"))
	if in.Text == "fail" {
		return status.Error(codes.ResourceExhausted, "counted enough")
	}
	return nil
}

func (relay) Sum(s grpc.ClientStreamingServer[compatv1.Note, compatv1.Note]) error {
	var texts []string
	for {
		n, err := s.Recv()
		if err == io.EOF {
			if err := grpc.SendHeader(s.Context(), metadata.Pairs("x-h", "sum "+seen(s.Context()))); err != nil {
				return err
			}
			if err := grpc.SetTrailer(s.Context(), metadata.Pairs("x-t", "sum")); err != nil {
				return err
			}
			return s.SendAndClose(&compatv1.Note{Text: strings.Join(texts, "+"), Seq: int32(len(texts))})
		}
		if err != nil {
			return err
		}
		texts = append(texts, n.Text)
	}
}

func (relay) Chat(s grpc.BidiStreamingServer[compatv1.Note, compatv1.Note]) error {
	if err := s.SendHeader(metadata.Pairs("x-h", "chat "+seen(s.Context()))); err != nil {
		return err
	}
	for {
		n, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		n.Seq++
		if err := s.Send(n); err != nil {
			return err
		}
		if n.Text == "fail" {
			s.SetTrailer(metadata.Pairs("x-t", "chat"))
			return status.Error(codes.Aborted, "chat failed")
		}
	}
}

// transcript calls every method through a gRPC-shaped client and writes
// down what it sees: messages, x- headers and trailers, status codes.
func transcript(ctx context.Context, c compatv1.RelayClient) ([]string, error) {
	var out []string
	note := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	ctx = metadata.AppendToOutgoingContext(ctx, "x-req", "r")
	for _, text := range []string{"hi", "fail"} {
		var h, t metadata.MD
		r, err := c.Echo(ctx, &compatv1.Note{Text: text}, grpc.Header(&h), grpc.Trailer(&t))
		note("echo %q %s %s h=%s t=%s", r.GetText(), status.Code(err), errMsg(err), keys(h), keys(t))

		cs, err := c.Count(ctx, &compatv1.Note{Text: text, Seq: 3}, grpc.Header(&h), grpc.Trailer(&t))
		if err != nil {
			return nil, err
		}
		for {
			n, err := cs.Recv()
			if err != nil {
				hd, _ := cs.Header()
				note("count end %s %s h=%s t=%s opt h=%s t=%s", status.Code(err), errMsg(err), keys(hd), keys(cs.Trailer()), keys(h), keys(t))
				break
			}
			note("count %s %d", n.Text, n.Seq)
		}

		ss, err := c.Sum(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range []string{"a", "b", text} {
			if err := ss.Send(&compatv1.Note{Text: s}); err != nil {
				return nil, err
			}
		}
		sum, err := ss.CloseAndRecv()
		hd, _ := ss.Header()
		note("sum %q %d %s h=%s t=%s", sum.GetText(), sum.GetSeq(), status.Code(err), keys(hd), keys(ss.Trailer()))

		bs, err := c.Chat(ctx)
		if err != nil {
			return nil, err
		}
		hd, err = bs.Header()
		note("chat header %s %v", keys(hd), err)
		// Each note waits for its echo, and nothing is sent between the
		// handler's failure and the client's reading it: what both see does
		// not depend on timing.
		for i, s := range []string{"x", strings.Repeat("y", 100_000), text} {
			if err := bs.Send(&compatv1.Note{Text: s, Seq: int32(i)}); err != nil {
				return nil, err
			}
			n, err := bs.Recv()
			if err != nil {
				return nil, err
			}
			note("chat %d %d", len(n.Text), n.Seq)
		}
		if text == "fail" {
			_, err := bs.Recv()
			note("chat end %s %s t=%s", status.Code(err), errMsg(err), keys(bs.Trailer()))
			// Once the end is read, Send says io.EOF on both.
			note("chat send after the end: %v", bs.Send(&compatv1.Note{Text: "after"}))
		}
		if err := bs.CloseSend(); err != nil {
			return nil, err
		}
		_, err = bs.Recv()
		note("chat close %s %s t=%s", status.Code(err), errMsg(err), keys(bs.Trailer()))
	}
	return out, nil
}

func errMsg(err error) string {
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Sprint(err)
	}
	return status.Convert(err).Message()
}

// keys lists md's x- keys and values.
func keys(md metadata.MD) string {
	var ks []string
	for k, v := range md {
		if strings.HasPrefix(k, "x-") {
			ks = append(ks, k+":"+strings.Join(v, ","))
		}
	}
	sort.Strings(ks)
	return "[" + strings.Join(ks, " ") + "]"
}

func init() {
	checks = append(checks, check{"compat: one gRPC implementation, every shape, the same transcript over gRPC and erpc", func(ctx context.Context, _ *erpc.Session) error {
		srv := erpc.NewServer()
		if err := compatv1.RegisterRelayERPCServer(srv, relay{}); err != nil {
			return err
		}
		ep, err := srv.Listen("mem://erpc-e2e-compat")
		if err != nil {
			return err
		}
		defer ep.Close()
		s, err := erpc.Dial(ctx, ep.Target())
		if err != nil {
			return err
		}
		defer s.Close()
		gs := grpc.NewServer()
		compatv1.RegisterRelayServer(gs, relay{})
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		go gs.Serve(lis)
		defer gs.Stop()
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer conn.Close()
		g, err := transcript(ctx, compatv1.NewRelayClient(conn))
		if err != nil {
			return fmt.Errorf("over gRPC: %w", err)
		}
		e, err := transcript(ctx, compatv1.NewRelayERPCClient(s))
		if err != nil {
			return fmt.Errorf("over erpc: %w", err)
		}
		if !slices.Equal(g, e) {
			return fmt.Errorf("transcripts differ:\ngRPC:\n  %s\nerpc:\n  %s", strings.Join(g, "\n  "), strings.Join(e, "\n  "))
		}
		fmt.Printf("   %d lines alike, from %q to %q\n", len(g), g[0], g[len(g)-1])
		return nil
	}})
}
