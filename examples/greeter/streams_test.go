package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/erpc-go/erpc/examples/greeter/greeterpb"
)

// streamTranscript runs the streaming methods through c and writes down,
// line by line, every message, the greeter's headers and trailers (from
// the stream and from the grpc.Header and grpc.Trailer options), and each
// end's status code, message and details.
func streamTranscript(ctx context.Context, t *testing.T, c greeterpb.GreeterClient) []string {
	t.Helper()
	var out []string
	note := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	ctx = metadata.AppendToOutgoingContext(ctx, "client", "transcript")

	chat, err := c.Chat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hd, err := chat.Header()
	note("chat header %s %v", greeterKeys(hd), err)
	for _, name := range []string{"Ada", "Bob", "Ada", "Alan", "", "never sent"} {
		if err := chat.Send(&greeterpb.HelloRequest{Name: name}); err != nil {
			note("chat send %q: %v", name, err) // io.EOF: the handler has ended the chat
			break
		}
		r, err := chat.Recv()
		if err != nil {
			note("chat end %s", endOf(err))
			break
		}
		note("chat %q", r.GetMessage())
	}
	note("chat trailer %s", greeterKeys(chat.Trailer()))

	for _, prefix := range []string{"A", "", "Z"} {
		var h, tr metadata.MD
		list, err := c.ListGreeted(ctx, &greeterpb.ListGreetedRequest{Prefix: prefix}, grpc.Header(&h), grpc.Trailer(&tr))
		if err != nil {
			t.Fatal(err)
		}
		for {
			r, err := list.Recv()
			if err != nil {
				hd, _ := list.Header()
				note("list %q end %s header %s trailer %s options %s %s", prefix, endOf(err),
					greeterKeys(hd), greeterKeys(list.Trailer()), greeterKeys(h), greeterKeys(tr))
				break
			}
			note("list %q: %q", prefix, r.GetMessage())
		}
	}
	return out
}

func endOf(err error) string {
	if err == io.EOF {
		return "EOF"
	}
	return describe(err)
}

// greeterKeys lists md's greeter- keys with their values: gRPC adds keys
// of its transport's, erpc none.
func greeterKeys(md metadata.MD) string {
	var ks []string
	for k, vs := range md {
		if strings.HasPrefix(k, "greeter-") {
			ks = append(ks, k+"="+strings.Join(vs, ","))
		}
	}
	sort.Strings(ks)
	return "[" + strings.Join(ks, " ") + "]"
}

// TestStreamsBothWays calls the streaming methods of ONE Greeter, served
// over gRPC and over erpc, and compares what each client sees message by
// message: the replies, the headers and trailers, and the status (with
// its detail) that ends a stream. The greeter forgets between the two
// runs, so both start from the same state.
func TestStreamsBothWays(t *testing.T) {
	impl, g, e, _, _ := both(t)
	c := ctx(t)
	overGRPC := streamTranscript(c, t, g)
	impl.mu.Lock()
	clear(impl.seen)
	impl.mu.Unlock()
	overERPC := streamTranscript(c, t, e)
	if !slices.Equal(overGRPC, overERPC) {
		t.Fatalf("transcripts differ:\ngRPC:\n  %s\nerpc:\n  %s", strings.Join(overGRPC, "\n  "), strings.Join(overERPC, "\n  "))
	}
	t.Logf("both ways:\n  %s", strings.Join(overERPC, "\n  "))
	// What they agree on is what the service promises.
	for _, want := range []string{
		`chat header [greeter-client=transcript] <nil>`,
		`chat "Hello, Alan!"`,
		// (protojson's spacing varies between builds on purpose)
		"chat end code InvalidArgument: say hello to whom? the name is empty\n  detail google.rpc.BadRequest: {",
		`chat trailer [greeter-greeted=4]`,
		`list "A": "Hello, Ada! (greeted 2 times)"`,
		`list "A": "Hello, Alan! (greeted 1 times)"`,
		`list "A" end EOF header [greeter-names=3] trailer [greeter-listed=2] options [greeter-names=3] [greeter-listed=2]`,
		`list "Z" end code NotFound: no name greeted starts with "Z" header [greeter-names=3] trailer [greeter-listed=0] options [greeter-names=3] [greeter-listed=0]`,
	} {
		if !slices.ContainsFunc(overERPC, func(line string) bool { return strings.HasPrefix(line, want) }) {
			t.Errorf("transcript lacks %q:\n  %s", want, strings.Join(overERPC, "\n  "))
		}
	}
	// The erpc client's errors read as gRPC statuses.
	list, err := e.ListGreeted(c, &greeterpb.ListGreetedRequest{Prefix: "Z"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := list.Recv(); status.Code(err).String() != "NotFound" {
		t.Fatalf("status.Code of the erpc stream's end: %v", err)
	}
}
