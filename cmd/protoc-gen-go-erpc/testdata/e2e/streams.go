package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	streamv1 "example.com/erpctest/gen/stream/v1"
	"github.com/erpc-go/erpc"
)

// The streaming methods of Mixed, generated without grpc_compat: erpc's
// typed streams.

// ServerStream answers with n chunks, n the request's length, each
// "<request>-<i>"; headers and trailers say what it saw.
func (mixed) ServerStream(in *streamv1.Chunk, s streamv1.MixedERPC_ServerStreamServer) error {
	md, _ := erpc.IncomingMetadata(s.Context())
	if err := s.SetHeader(erpc.Metadata{"x-seen": md["x-req"]}); err != nil {
		return err
	}
	for i := range len(in.Data) {
		if err := s.Send(&streamv1.Chunk{Data: fmt.Appendf(nil, "%s-%d", in.Data, i)}); err != nil {
			return err
		}
	}
	s.SetTrailer(erpc.Metadata{"x-sent": {fmt.Sprint(len(in.Data))}})
	return nil
}

// ClientStream answers with the chunks joined.
func (mixed) ClientStream(s streamv1.MixedERPC_ClientStreamServer) error {
	var all []byte
	for {
		c, err := s.Recv()
		if err == io.EOF {
			return s.SendAndClose(&streamv1.Chunk{Data: all})
		}
		if err != nil {
			return err
		}
		all = append(all, c.Data...)
	}
}

// Bidi echoes each chunk reversed, and fails with FailedPrecondition at a
// chunk "fail", after echoing it.
func (mixed) Bidi(s streamv1.MixedERPC_BidiServer) error {
	for {
		c, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		r := bytes.Clone(c.Data)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		if err := s.Send(&streamv1.Chunk{Data: r}); err != nil {
			return err
		}
		if string(c.Data) == "fail" {
			s.SetTrailer(erpc.Metadata{"x-why": {"asked to"}})
			return erpc.Errorf(erpc.FailedPrecondition, "failed as asked")
		}
	}
}

func init() {
	checks = append(checks, check{"streams: every shape, typed, over erpc", func(ctx context.Context, s *erpc.Session) error {
		c := streamv1.NewMixedERPCClient(s)
		if err := checkServerStream(ctx, c); err != nil {
			return fmt.Errorf("ServerStream: %w", err)
		}
		cs, err := c.ClientStream(ctx)
		if err != nil {
			return err
		}
		var want []byte
		for i := range 50 {
			part := fmt.Appendf(nil, "%d,", i)
			want = append(want, part...)
			if err := cs.Send(&streamv1.Chunk{Data: part}); err != nil {
				return err
			}
		}
		got, err := cs.CloseAndRecv()
		if err != nil || !bytes.Equal(got.Data, want) {
			return fmt.Errorf("ClientStream: %q, %v", got.GetData(), err)
		}
		if err := checkBidi(ctx, c); err != nil {
			return fmt.Errorf("Bidi: %w", err)
		}
		w, err := streamv1.NewStreamsERPCClient(s).Watch(ctx, &streamv1.Chunk{})
		if err == nil {
			_, err = w.Recv()
		}
		return wantCode(err, erpc.Unimplemented, "/erpctest.stream.v1.Streams/Watch not implemented")
	}})
}

func checkServerStream(ctx context.Context, c streamv1.MixedERPCClient) error {
	ctx = erpc.NewOutgoingContext(ctx, erpc.Metadata{"x-req": {"r1"}})
	st, err := c.ServerStream(ctx, &streamv1.Chunk{Data: []byte("abc")})
	if err != nil {
		return err
	}
	var got []string
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		got = append(got, string(m.Data))
	}
	h, err := st.Header()
	if err != nil {
		return err
	}
	if strings.Join(got, " ") != "abc-0 abc-1 abc-2" || strings.Join(h["x-seen"], ",") != "r1" ||
		strings.Join(st.Trailer()["x-sent"], ",") != "3" {
		return fmt.Errorf("got %q, header %v, trailer %v", got, h, st.Trailer())
	}
	return nil
}

// checkBidi sends chunks of random sizes (some of many packets) and
// reads each echo before the next, then asks the handler to fail.
func checkBidi(ctx context.Context, c streamv1.MixedERPCClient) error {
	rng := rand.New(rand.NewPCG(29, 3))
	st, err := c.Bidi(ctx)
	if err != nil {
		return err
	}
	for i := range 40 {
		data := make([]byte, rng.IntN(1+(i%4)*40_000))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		if string(data) == "fail" {
			continue
		}
		if err := st.Send(&streamv1.Chunk{Data: data}); err != nil {
			return err
		}
		m, err := st.Recv()
		if err != nil {
			return err
		}
		slices := bytes.Clone(m.Data)
		for a, b := 0, len(slices)-1; a < b; a, b = a+1, b-1 {
			slices[a], slices[b] = slices[b], slices[a]
		}
		if !bytes.Equal(slices, data) {
			return fmt.Errorf("message %d (%d bytes) came back wrong", i, len(data))
		}
	}
	if err := st.Send(&streamv1.Chunk{Data: []byte("fail")}); err != nil {
		return err
	}
	if m, err := st.Recv(); err != nil || string(m.Data) != "liaf" {
		return fmt.Errorf("the last echo: %v, %v", m, err)
	}
	_, err = st.Recv()
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.FailedPrecondition || e.Msg != "failed as asked" {
		return fmt.Errorf("the end: %v", err)
	}
	if why := st.Trailer()["x-why"]; len(why) != 1 || why[0] != "asked to" {
		return fmt.Errorf("trailer %v", st.Trailer())
	}
	return nil
}
