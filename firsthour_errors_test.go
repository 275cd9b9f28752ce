package erpc_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
)

// First-hour traps (issue 14, see firsthour_test.go): errors that say what
// went wrong and where.

// TestErrorsUsersCanActOn: mistakes fail at once, and errors say what and
// where.
func TestErrorsUsersCanActOn(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	for _, target := range []string{"", "udp://", "127.0.0.1:0", "localhost", "udp://:31850"} {
		start := time.Now()
		_, err := erpc.Dial(ctx, target)
		if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), fmt.Sprintf("%q", target)) {
			t.Errorf("Dial(%q): %v, want InvalidArgument naming the target", target, err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("Dial(%q) took %v to fail", target, d)
		}
	}
	if _, err := erpc.Dial(ctx, "bogus://x"); erpc.CodeOf(err) != erpc.InvalidArgument {
		t.Errorf("unknown scheme: %v", err)
	}
	for _, addr := range []string{"bogus://x", "no-port", "256.1.1.1:80"} {
		var e *erpc.Error
		if _, err := erpc.Listen(addr); !errors.As(err, &e) {
			t.Errorf("Listen(%q): %T %v, want an *erpc.Error", addr, err, err)
		}
	}
	udpEp := udpNet{}.Listen(t, nil)
	if _, err := udpEp.Dial(ctx, "shm:///tmp/x.sock"); erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "udp://") {
		t.Errorf("shm target from a UDP endpoint: %v, want InvalidArgument naming the transports", err)
	}
	if _, err := erpc.Dial(ctx, "shm://"+filepath.Join(t.TempDir(), "none.sock")); erpc.CodeOf(err) != erpc.Unavailable ||
		!strings.Contains(err.Error(), "no endpoint listens") {
		t.Errorf("shm path with nothing there: %v", err)
	}
	// A dial that times out names its target.
	dead, err := erpc.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadTarget := dead.Target()
	dead.Close()
	_, err = erpc.Dial(ctx, deadTarget, erpc.WithFailureTimeout(200*time.Millisecond))
	if erpc.CodeOf(err) != erpc.Unavailable || !strings.Contains(err.Error(), deadTarget) || strings.Count(err.Error(), "erpc:") != 1 {
		t.Errorf("dial with nothing listening: %v", err)
	}

	n := newMemNet()
	h := erpc.NewServer()
	h.Handle("Echo", echoHandler)
	srv := n.Listen(t, h, erpc.WithMaxMessageSize(1000))
	s := dialT(t, n, n.Listen(t, nil), srv)
	_, err = call(t, s, "Missing", nil)
	if erpc.CodeOf(err) != erpc.Unimplemented || !strings.Contains(err.Error(), `"Missing"`) {
		t.Errorf("unknown method: %v, want Unimplemented naming it", err)
	}
	_, err = call(t, s, "Echo", make([]byte, 5000))
	if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "5000") || !strings.Contains(err.Error(), "1000") {
		t.Errorf("request over the session's limit: %v, want InvalidArgument with both sizes", err)
	}
	if strings.Count(fmt.Sprint(err), "erpc:") != 1 {
		t.Errorf("error text repeats its prefix: %v", err)
	}
	// The endpoint of an in-memory or shared-memory server can be dialed
	// at its Target.
	memSrv, err := serverWith(t, "Echo", echoHandler).Listen("mem://" + t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer memSrv.Close()
	ms, err := erpc.Dial(ctx, memSrv.Target())
	if err != nil {
		t.Fatalf("dial %s: %v", memSrv.Target(), err)
	}
	if resp, err := call(t, ms, "Echo", []byte("mem")); err != nil || string(resp) != "mem" {
		t.Fatalf("call over %s: %q %v", memSrv.Target(), resp, err)
	}
	ms.Close()
}

// TestTooLargeIsInvalidArgument: a request over the smaller of the two
// ends' limits is the caller's mistake, not a full server: InvalidArgument
// with both sizes, not ResourceExhausted. (A server's NACK for a request
// too large, which only a client that ignores the negotiated limit can
// draw, maps the same way: TestClientTable_NackAndReset.)
func TestTooLargeIsInvalidArgument(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	srv := n.Listen(t, serverWith(t, "Echo", echoHandler), erpc.WithMaxMessageSize(4000))
	s := dialT(t, n, n.Listen(t, nil), srv)
	_, err := call(t, s, "Echo", make([]byte, 8000))
	if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "4000") || !strings.Contains(err.Error(), "8000") {
		t.Fatalf("too large for the server: %v, want InvalidArgument with its limit", err)
	}
}

// TestTypeMismatch: a client and a server that disagree on a typed
// method's protobuf types get an error naming them, not a message decoded
// into the wrong type.
func TestTypeMismatch(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	h := erpc.NewServer()
	if err := erpc.Register(h, "Get", func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return wrapperspb.String("for " + req.GetValue()), nil
	}); err != nil {
		t.Fatal(err)
	}
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, h))
	ctx := context.Background()
	if got, err := erpc.Invoke[wrapperspb.StringValue](ctx, s, "Get", wrapperspb.String("x")); err != nil || got.GetValue() != "for x" {
		t.Fatalf("matching types: %v %v", got, err)
	}
	_, err := erpc.Invoke[wrapperspb.Int64Value](ctx, s, "Get", wrapperspb.Int64(7))
	if erpc.CodeOf(err) != erpc.Unimplemented || !strings.Contains(err.Error(), "google.protobuf.Int64Value") {
		t.Fatalf("other types: %v, want Unimplemented naming the types", err)
	}
	// A raw caller reaches the method by name.
	b, _ := proto.Marshal(wrapperspb.String("raw"))
	if resp, err := s.Call(ctx, "Get", b, nil); err != nil || len(resp) == 0 {
		t.Fatalf("raw call of a typed method: %v", err)
	}
}
