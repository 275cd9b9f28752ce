package main

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The command line in grpcurl's shape: flags, TARGET, then a command or a
// method to call.

// TestGRPCurlForms: each argument form, against one server.
func TestGRPCurlForms(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	order := `{"customer": "ada", "items": [{"sku": "a", "quantity": 2}]}`

	// -d inline, the method in each spelling, with call and without.
	for _, args := range [][]string{
		{"-d", order, target, "/erpc.clitest.v1.Shop/Order"},
		{"-d", order, target, "erpc.clitest.v1.Shop/Order"},
		{"-d", order, target, "erpc.clitest.v1.Shop.Order"},
		{"-d", order, target, "call", "erpc.clitest.v1.Shop.Order"},
		{"-plaintext", "-format", "json", "-d", order, target, "erpc.clitest.v1.Shop.Order"},
	} {
		expect(t, erpcCmd(t, "", args...), 0, "\"id\": \"o-ada\",\n  \"totalItems\": 2,", "")
	}
	// -d @: the request from standard input; none at all is {}.
	expect(t, erpcCmd(t, order, "-d", "@", target, "erpc.clitest.v1.Shop.Order"), 0, `"id": "o-ada"`, "")
	expect(t, erpcCmd(t, " \n", "-d", "@", target, "erpc.clitest.v1.Shop.WhoAmI"), 0, "{", "")
	// Several messages on standard input: for streams; a unary method
	// takes one.
	expect(t, erpcCmd(t, order+"\n"+order+"\n", "-d", "@", target, "erpc.clitest.v1.Shop.Order"), 1, "",
		"the request is not JSON of type erpc.clitest.v1.OrderRequest: /erpc.clitest.v1.Shop/Order is unary: it takes one request message, and the request holds 2")
	expect(t, erpcCmd(t, `{"A": 1, "B": 2} {"A": 3, "B": 4}`, "-d", "@", target, "Add"), 1, "",
		"Add is unary: it takes one request message, and the request holds 2")
	// A raw handler's request is bytes, even several JSON texts.
	r := erpcCmd(t, "{} {}", "-d", "@", target, "Echo")
	if r.code != 0 || r.stdout != "{} {}" {
		t.Fatalf("Echo from standard input: %v", r)
	}

	// -H 'key: value', repeatable, the same key twice too.
	r = erpcCmd(t, "", "-H", "x-user: ada", "-H", "x-user: bob", "-H", "x-trace: t1", target, "erpc.clitest.v1.Shop.WhoAmI")
	var caller struct{ Metadata map[string]string }
	if err := json.Unmarshal([]byte(r.stdout), &caller); r.code != 0 || err != nil {
		t.Fatalf("WhoAmI: %v (%v)", r, err)
	}
	if caller.Metadata["x-user"] != "ada,bob" || caller.Metadata["x-trace"] != "t1" {
		t.Fatalf("WhoAmI saw metadata %v", caller.Metadata)
	}

	// Mistakes: an unknown method, bad JSON.
	expect(t, erpcCmd(t, "", target, "erpc.clitest.v1.Shop.Nope"), 64+5, "", `the server has no method "/erpc.clitest.v1.Shop/Nope"`)
	expect(t, erpcCmd(t, "", "-d", `{"customer": }`, target, "erpc.clitest.v1.Shop.Order"), 1, "",
		"the request is not JSON of type erpc.clitest.v1.OrderRequest: message 1: invalid character '}'")
	expect(t, erpcCmd(t, "", "-d", `{"customer": "ada"`, target, "erpc.clitest.v1.Shop.Order"), 1, "",
		"unexpected end of JSON input")

	// list and health, target first.
	r = erpcCmd(t, "", target, "list", "erpc.clitest.v1.Shop")
	if want := []string{"/erpc.clitest.v1.Shop/Cancel", "/erpc.clitest.v1.Shop/Order", "/erpc.clitest.v1.Shop/Wait", "/erpc.clitest.v1.Shop/WhoAmI"}; r.code != 0 || !slices.Equal(sortedLines(r.stdout), want) {
		t.Fatalf("list the shop: %v", r)
	}
	expect(t, erpcCmd(t, "", target, "health", "erpc.clitest.v1.Shop"), 0, "SERVING\n", "")
	if strings.Contains(r.stderr, "deprecated") {
		t.Fatalf("grpcurl's order called deprecated: %v", r)
	}
}

// TestMaxTime: -max-time bounds the whole run: a slow method, and a dial
// with nobody there; the server's handler sees it as its deadline.
func TestMaxTime(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	r := erpcCmd(t, "", "-max-time", "0.5", "-d", `{"millis": 20000}`, target, "erpc.clitest.v1.Shop.Wait")
	expect(t, r, 64+4, "", "DeadlineExceeded")
	expect(t, r, 64+4, "", "(-max-time 500ms)")
	// The deadline the handler sees is the nearer one.
	r = erpcCmd(t, "", "-max-time", "3", "-deadline", "0", target, "erpc.clitest.v1.Shop.WhoAmI")
	var caller struct{ DeadlineMillis string }
	if err := json.Unmarshal([]byte(r.stdout), &caller); r.code != 0 || err != nil {
		t.Fatalf("WhoAmI: %v (%v)", r, err)
	}
	if ms, _ := strconv.Atoi(caller.DeadlineMillis); ms <= 0 || ms > 3000 {
		t.Fatalf("with -max-time 3 the handler saw a deadline %d ms away: %v", ms, r)
	}
	// A Go duration is taken too.
	expect(t, erpcCmd(t, "", "-max-time", "10s", "-d", `{"millis": 1}`, target, "erpc.clitest.v1.Shop.Wait"), 0, "{}", "")

	// Nobody there: -max-time cuts the connection's wait short.
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := c.LocalAddr().String()
	c.Close()
	expect(t, erpcCmd(t, "", "-max-time", "0.3", "-connect-timeout", "20", dead, "list"), 1, "",
		fmt.Sprintf("no erpc server accepted a session at %s within 300ms (-max-time)", dead))
}

// TestFormerOrder: the command before the target still works, and says it
// is deprecated.
func TestFormerOrder(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	for _, c := range []struct {
		args   []string
		stdin  string
		stdout string
	}{
		{[]string{"list", target}, "", "erpc.clitest.v1.Shop\n"},
		{[]string{"list", "-l", target, "erpc.clitest.v1.Shop"}, "", "/erpc.clitest.v1.Shop/Order(erpc.clitest.v1.OrderRequest)"},
		{[]string{"describe", target, "erpc.clitest.v1.Shop.Order"}, "", "  codec: proto\n"},
		{[]string{"call", target, "Add", `{"A": 2, "B": 40}`}, "", `"Sum": 42`},
		{[]string{"call", target, "Add", "-"}, `{"A": 1, "B": 1}`, `"Sum": 2`},
		{[]string{"health", target}, "", "SERVING\n"},
	} {
		r := erpcCmd(t, c.stdin, c.args...)
		expect(t, r, 0, c.stdout, "erpc: note: the command before the target is deprecated; as grpcurl has it: erpc [flags] "+target+" "+c.args[0])
	}
}

// TestDescribeMarksUncallable: describe marks what the command cannot
// call, the methods a .proto declares but the server does not serve (a
// stream among them); list leaves them out; calling them says why. The
// streams it serves are callable, and describe says how the command
// calls each shape.
func TestDescribeMarksUncallable(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	service := `service Watcher {
  rpc Watch(erpc.clitest.v1.WaitRequest) returns (stream erpc.clitest.v1.Caller);  // not served at this target
  rpc Peek(google.protobuf.Empty) returns (erpc.clitest.v1.Caller);
  rpc Later(google.protobuf.Empty) returns (google.protobuf.Empty);  // not served at this target
}
`
	expect(t, erpcCmd(t, "", target, "describe", "erpc.clitest.v1.Watcher"), 0, service, "")
	expect(t, erpcCmd(t, "", target, "describe", "erpc.clitest.v1.Watcher.Watch"), 0,
		"rpc Watch(erpc.clitest.v1.WaitRequest) returns (stream erpc.clitest.v1.Caller);  // not served at this target", "")
	streams := `service Streams {
  rpc Count(erpc.clitest.v1.WaitRequest) returns (stream erpc.clitest.v1.OrderReply);
  rpc Forever(erpc.clitest.v1.WaitRequest) returns (stream erpc.clitest.v1.Caller);
  rpc Sum(stream erpc.clitest.v1.OrderRequest) returns (erpc.clitest.v1.OrderReply);
  rpc Chat(stream erpc.clitest.v1.CancelRequest) returns (stream erpc.clitest.v1.OrderError);
}
`
	expect(t, erpcCmd(t, "", target, "describe", "erpc.clitest.v1.Streams"), 0, streams, "")
	for method, shape := range map[string]string{
		"Count": "server-streaming: sends -d's message, prints each answer on a line as it comes",
		"Sum":   "client-streaming: sends -d's messages (@: standard input's, as they come), prints the answer",
		"Chat":  "bidirectional: sends -d's messages (@: standard input's, as they come) while it prints each answer on a line",
	} {
		r := erpcCmd(t, "", target, "describe", "erpc.clitest.v1.Streams."+method)
		expect(t, r, 0, "/erpc.clitest.v1.Streams/"+method+" [stream]\n  codec: proto, as its descriptor says\n  runs: a stream: on a goroutine of its own per stream\n  the command: "+shape+"\n", "")
		expect(t, r, 0, "  defined in erpc/clitest/v1/streams.proto as:\n", "")
	}
	expect(t, erpcCmd(t, "", "-l", target, "list", "erpc.clitest.v1.Streams"), 0, "/erpc.clitest.v1.Streams/Chat [stream]\n", "")
	expect(t, erpcCmd(t, "", target, "describe", "Lines"), 0, "Lines [stream]\n  codec: none: a stream of bytes\n", "")

	// Without a symbol: every service, the methods of none after them.
	r := erpcCmd(t, "", target, "describe")
	for _, want := range []string{service, streams, "service Shop {\n  rpc Order(", "service Health {", "service Reflection {",
		"// methods of no service:\nAdd [json]\nEcho(bytes) returns (bytes)\nLines [stream]\n"} {
		expect(t, r, 0, want, "")
	}

	r = erpcCmd(t, "", target, "list", "erpc.clitest.v1.Watcher")
	if r.code != 0 || r.stdout != "/erpc.clitest.v1.Watcher/Peek\n" {
		t.Fatalf("list Watcher: %v", r)
	}
	expect(t, erpcCmd(t, "", target, "erpc.clitest.v1.Watcher/Watch"), 64+12, "",
		"the server at "+target+" does not serve /erpc.clitest.v1.Watcher/Watch, which erpc/clitest/v1/watch.proto declares")
	expect(t, erpcCmd(t, "", target, "erpc.clitest.v1.Watcher.Later"), 64+12, "",
		"the server at "+target+" does not serve /erpc.clitest.v1.Watcher/Later, which erpc/clitest/v1/watch.proto declares")
}

// TestSecondsFlag: grpcurl's seconds, and Go durations.
func TestSecondsFlag(t *testing.T) {
	var d time.Duration
	f := secondsFlag{&d}
	for in, want := range map[string]time.Duration{"2": 2 * time.Second, "0.5": 500 * time.Millisecond, "0": 0, "300ms": 300 * time.Millisecond, "1m": time.Minute} {
		if err := f.Set(in); err != nil || d != want {
			t.Errorf("Set(%q): %v, %v; want %v", in, d, err, want)
		}
	}
	for _, bad := range []string{"-1", "-1s", "soon", "", "1e300", "NaN"} {
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted: %v", bad, d)
		}
	}
}
