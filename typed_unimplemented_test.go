package erpc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
)

// Protobuf is needed here only for the typed API's message names (a
// mismatch of types is told by them); the status is status_grpc_test.go's
// fake, which needs none.

// TestTypedUnimplementedFromHandler: a typed handler that answers
// Unimplemented (a gRPC status, say) keeps its message; only the server's
// own "no such method" names the types the caller asked for.
func TestTypedUnimplementedFromHandler(t *testing.T) {
	srv := erpc.NewServer()
	err := erpc.Register(srv, "Feature", func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return nil, newFakeStatusError(int32(erpc.Unimplemented), "not in this edition")
	})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://typedunimpl-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = erpc.Invoke[wrapperspb.StringValue](ctx, s, "Feature", wrapperspb.String("x"))
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.Unimplemented || e.Msg != "not in this edition" || erpc.NotExecuted(err) {
		t.Fatalf("the handler's Unimplemented arrived as %v", err)
	}
	_, err = erpc.Invoke[wrapperspb.BytesValue](ctx, s, "Feature", wrapperspb.String("x"))
	if !errors.As(err, &e) || e.Code != erpc.Unimplemented || !strings.Contains(e.Msg, "other types does not match") || !erpc.NotExecuted(err) {
		t.Fatalf("a call with other types got %v", err)
	}
}
