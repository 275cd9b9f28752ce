package erpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestGRPCStatusEndsStreamWithoutGlue: a stream handler that returns a
// gRPC status error (wrapped or not) ends the stream with the status's
// code, message and details, as a unary handler's does (before, the
// message was the error's text, "rpc error: code = ... desc = ..."); the client's Recv
// returns them. Codes, messages and details are random (seeded).
func TestGRPCStatusEndsStreamWithoutGlue(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 4))
	var next error
	srv := streamServer(t, "Fail", func(s erpc.ServerStream) error {
		if err := s.Send([]byte("first")); err != nil {
			return err
		}
		return next
	})
	_, sess := streamPair(t, newMemNet(), srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 40 {
		code := erpc.Code(1 + rng.IntN(int(erpc.Unauthenticated)))
		msg := fmt.Sprintf("failure %d %x", i, rng.Uint64())
		detail := fakeDetail{url: "type.googleapis.com/test.Detail", val: []byte(msg)}
		var err error = newFakeStatusError(int32(code), msg, detail)
		if i%2 == 1 {
			// Wrapped: the whole text is the message, as on a unary call
			// (and in grpc's status.FromError).
			err = fmt.Errorf("wrapped: %w", err)
			msg = err.Error()
		}
		next = err
		st, err := sess.NewStream(ctx, "Fail")
		if err != nil {
			t.Fatal(err)
		}
		if m, err := st.Recv(); err != nil || string(m) != "first" {
			t.Fatalf("first message: %q, %v", m, err)
		}
		_, err = st.Recv()
		var e *erpc.Error
		if !errors.As(err, &e) || e.Code != code || e.Msg != msg {
			t.Fatalf("stream %d: %v, want code %v and message %q", i, err, code, msg)
		}
		if len(e.Details) != 1 || e.Details[0].Type != "test.Detail" || !bytes.Equal(e.Details[0].Value, detail.val) {
			t.Fatalf("stream %d: details %+v", i, e.Details)
		}
	}
}
