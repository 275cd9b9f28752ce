package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var cliBin string // the erpc command, built for the tests

func TestMain(m *testing.M) {
	if mode := os.Getenv(serverEnv); mode != "" {
		serveForTest(mode)
		return
	}
	dir, err := os.MkdirTemp("", "erpc-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cliBin = filepath.Join(dir, "erpc")
	build := exec.Command("go", "build", "-o", cliBin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the erpc command: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func expect(t *testing.T, r result, code int, stdout, stderr string) {
	t.Helper()
	if r.code != code || !strings.Contains(r.stdout, stdout) || !strings.Contains(r.stderr, stderr) {
		t.Fatalf("want exit %d, stdout with %q, stderr with %q; got %v", code, stdout, stderr, r)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	r := erpcCmd(t, "", target, "list")
	expect(t, r, 0, "", "")
	want := []string{"Add", "Echo", "Lines", "StreamsCanceled", "erpc.clitest.v1.Shop", "erpc.clitest.v1.Streams", "erpc.clitest.v1.Watcher", "erpc.health.v1.Health", "erpc.reflection.v1.Reflection"}
	if got := sortedLines(r.stdout); !slices.Equal(got, want) {
		t.Fatalf("list: %q, want %q", got, want)
	}

	r = erpcCmd(t, "", target, "list", "erpc.clitest.v1.Shop")
	want = []string{"/erpc.clitest.v1.Shop/Cancel", "/erpc.clitest.v1.Shop/Order", "/erpc.clitest.v1.Shop/Wait", "/erpc.clitest.v1.Shop/WhoAmI"}
	if got := sortedLines(r.stdout); r.code != 0 || !slices.Equal(got, want) {
		t.Fatalf("list the shop: %q, want %q (%v)", got, want, r)
	}

	r = erpcCmd(t, "", "-l", target, "list")
	expect(t, r, 0, "/erpc.clitest.v1.Shop/Order(erpc.clitest.v1.OrderRequest) returns (erpc.clitest.v1.OrderReply) [background]\n", "")
	expect(t, r, 0, "Add [json]\n", "")
	expect(t, r, 0, "Echo(bytes) returns (bytes)\n", "")

	r = erpcCmd(t, "", target, "list", "erpc.clitest.v1.Nope")
	expect(t, r, 69, "", `has no service "erpc.clitest.v1.Nope"`)
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	r := erpcCmd(t, "", target, "describe", "/erpc.clitest.v1.Shop/Order")
	want := `/erpc.clitest.v1.Shop/Order(erpc.clitest.v1.OrderRequest) returns (erpc.clitest.v1.OrderReply) [background]
  codec: proto
  runs: in the background (erpc.Background)
  defined in erpc/clitest/v1/shop.proto as:
    rpc Order(erpc.clitest.v1.OrderRequest) returns (erpc.clitest.v1.OrderReply);

// erpc.clitest.v1.OrderRequest, in erpc/clitest/v1/shop.proto
message OrderRequest {
  enum Priority {
    PRIORITY_UNSPECIFIED = 0;
    PRIORITY_LOW = 1;
    PRIORITY_HIGH = 2;
  }
  message Item {
    string sku = 1;
    int32 quantity = 2;
  }
  string customer = 1;
  repeated erpc.clitest.v1.OrderRequest.Item items = 2;
  map<string, string> notes = 3;
  erpc.clitest.v1.OrderRequest.Priority priority = 4;
  oneof delivery {
    string address = 5;
    bool pickup = 6;
  }
  optional string coupon = 7;
  google.protobuf.Any extra = 8;
}

// erpc.clitest.v1.OrderReply, in erpc/clitest/v1/shop.proto
message OrderReply {
  string id = 1;
  int32 total_items = 2;
  google.protobuf.Timestamp placed = 3;
  erpc.clitest.v1.OrderRequest.Priority priority = 4;
  google.protobuf.Any extra = 5;
}
`
	if r.code != 0 || r.stdout != want {
		t.Fatalf("describe Order:\n%s\nwant:\n%s", r, want)
	}

	// The same method by its other spellings.
	for _, name := range []string{"erpc.clitest.v1.Shop/Order", "erpc.clitest.v1.Shop.Order"} {
		if r := erpcCmd(t, "", target, "describe", name); r.code != 0 || r.stdout != want {
			t.Errorf("describe %s: %v", name, r)
		}
	}

	r = erpcCmd(t, "", target, "describe", "erpc.clitest.v1.Shop")
	expect(t, r, 0, `service Shop {
  rpc Order(erpc.clitest.v1.OrderRequest) returns (erpc.clitest.v1.OrderReply);
  rpc Cancel(erpc.clitest.v1.CancelRequest) returns (google.protobuf.Empty);
`, "")
	r = erpcCmd(t, "", target, "describe", "erpc.clitest.v1.OrderRequest.Priority")
	expect(t, r, 0, "enum Priority {\n  PRIORITY_UNSPECIFIED = 0;", "")
	r = erpcCmd(t, "", target, "describe", "google.protobuf.Timestamp")
	expect(t, r, 0, "// google.protobuf.Timestamp, in google/protobuf/timestamp.proto\nmessage Timestamp {\n  int64 seconds = 1;\n  int32 nanos = 2;\n}\n", "")
	r = erpcCmd(t, "", target, "describe", "Echo")
	expect(t, r, 0, "Echo(bytes) returns (bytes)\n  codec: none: a raw handler of bytes\n  runs: inline, on the event loop\n", "")

	r = erpcCmd(t, "", target, "describe", "erpc.clitest.v1.Nope")
	expect(t, r, 69, "", `has no method "erpc.clitest.v1.Nope", and its protobuf registry no symbol of that name`)
}

func TestCall(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	order := `{"customer": "ada", "items": [{"sku": "a", "quantity": 2}, {"sku": "b", "quantity": 3}],
		"notes": {"gift": "yes"}, "priority": "PRIORITY_HIGH", "pickup": true, "coupon": "X"}`
	want := `{
  "id": "o-ada",
  "totalItems": 5,
  "placed": "2025-01-02T03:04:05Z",
  "priority": "PRIORITY_HIGH"
}
`
	r := erpcCmd(t, "", "-d", order, target, "/erpc.clitest.v1.Shop/Order")
	if r.code != 0 || r.stdout != want {
		t.Fatalf("call Order:\n%v\nwant:\n%s", r, want)
	}
	// The request from standard input, or a file; the method by its
	// other spellings.
	if r := erpcCmd(t, order, "-d", "@", target, "erpc.clitest.v1.Shop/Order"); r.code != 0 || r.stdout != want {
		t.Fatalf("call Order from stdin: %v", r)
	}
	file := filepath.Join(t.TempDir(), "order.json")
	if err := os.WriteFile(file, []byte(order), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := erpcCmd(t, "", "-d", "@"+file, target, "erpc.clitest.v1.Shop.Order"); r.code != 0 || r.stdout != want {
		t.Fatalf("call Order from a file: %v", r)
	}
	// An Any whose type the command fetches when it meets it.
	r = erpcCmd(t, "", target, "/erpc.clitest.v1.Shop/Order", "-d",
		`{"customer": "cy", "extra": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": "gift"}}`)
	expect(t, r, 0, `"extra": {
    "@type": "type.googleapis.com/google.protobuf.StringValue",
    "value": "gift"
  }`, "")

	// Defaults printed on request.
	r = erpcCmd(t, "", "-emit-defaults", "-d", `{"customer": "bo"}`, target, "/erpc.clitest.v1.Shop/Order")
	expect(t, r, 0, `"totalItems": 0,`, "")

	// A JSON method and a raw one.
	r = erpcCmd(t, "", "-d", `{"A": 2, "B": 40}`, target, "Add")
	expect(t, r, 0, "{\n  \"Sum\": 42\n}\n", "")
	r = erpcCmd(t, "", "-d", "raw bytes", target, "Echo")
	if r.code != 0 || r.stdout != "raw bytes" {
		t.Fatalf("call Echo: %v", r)
	}

	// Metadata and the deadline reach the handler.
	r = erpcCmd(t, "", "-H", "x-user=ada", "-H", "X-Trace: t1", "-deadline", "7s", target, "/erpc.clitest.v1.Shop/WhoAmI")
	var caller struct {
		Metadata       map[string]string
		DeadlineMillis string
	}
	if r.code != 0 {
		t.Fatal(r)
	}
	if err := json.Unmarshal([]byte(r.stdout), &caller); err != nil {
		t.Fatalf("%v: %v", err, r)
	}
	ms, _ := strconv.Atoi(caller.DeadlineMillis)
	if caller.Metadata["x-user"] != "ada" || caller.Metadata["x-trace"] != "t1" || ms < 5000 || ms > 7000 {
		t.Fatalf("WhoAmI: %v", r)
	}
	r = erpcCmd(t, "", "-deadline", "0", target, "/erpc.clitest.v1.Shop/WhoAmI")
	if r.code != 0 || strings.Contains(r.stdout, "deadlineMillis") {
		t.Fatalf("WhoAmI without a deadline: %v", r)
	}
}

func TestCallErrors(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)

	// A handler's error: its code is the exit status (64+9), its details
	// are printed as JSON.
	r := erpcCmd(t, "", "-d", `{"id": "o-7"}`, target, "/erpc.clitest.v1.Shop/Cancel")
	expect(t, r, 64+9, "", "call /erpc.clitest.v1.Shop/Cancel at "+target+": FailedPrecondition: order o-7 has shipped\n"+
		`  detail erpc.clitest.v1.OrderError: {"id":"o-7","reason":"shipped"}`)
	r = erpcCmd(t, "", "-d", `{}`, target, "/erpc.clitest.v1.Shop/Order")
	expect(t, r, 64+3, "", "InvalidArgument: an order needs a customer")

	// The deadline passes on the server.
	r = erpcCmd(t, "", "-deadline", "300ms", "-d", `{"millis": 5000}`, target, "/erpc.clitest.v1.Shop/Wait")
	expect(t, r, 64+4, "", "DeadlineExceeded")

	// Mistakes: an unknown method, bad JSON, a field the message lacks.
	r = erpcCmd(t, "", "-d", `{}`, target, "/erpc.clitest.v1.Shop/order")
	expect(t, r, 64+5, "", `the server has no method "/erpc.clitest.v1.Shop/order" (did you mean /erpc.clitest.v1.Shop/Order?)`)
	r = erpcCmd(t, "", "-d", `{}`, target, "Nope")
	expect(t, r, 64+5, "", `the server has no method "Nope" (generated services' methods are named "/package.Service/Method")`)
	r = erpcCmd(t, "", "-d", `{"customer": `, target, "/erpc.clitest.v1.Shop/Order")
	expect(t, r, 1, "", "the request is not JSON of type erpc.clitest.v1.OrderRequest")
	r = erpcCmd(t, "", "-d", `{"customr": "ada"}`, target, "/erpc.clitest.v1.Shop/Order")
	expect(t, r, 1, "", `unknown field "customr"`)
	r = erpcCmd(t, "", "-d", `{"A": `, target, "Add")
	expect(t, r, 1, "", "the request is not JSON")
}

func TestHealth(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	expect(t, erpcCmd(t, "", target, "health"), 0, "SERVING\n", "")
	expect(t, erpcCmd(t, "", target, "health", "erpc.clitest.v1.Shop"), 0, "SERVING\n", "")
	expect(t, erpcCmd(t, "", target, "health", "down"), 3, "NOT_SERVING\n", `service "down" at `+target+" is NOT_SERVING")
	expect(t, erpcCmd(t, "", target, "health", "nope"), 3, "SERVICE_UNKNOWN\n", "")
	expect(t, erpcCmd(t, "", "-all", target, "health"), 0, "\"\"\tSERVING\ndown\tNOT_SERVING\nerpc.clitest.v1.Shop\tSERVING\n", "")
}

// TestBareServer: a server without reflection or health says so.
func TestBareServer(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeBare)
	for _, cmd := range [][]string{
		{target, "list"},
		{target, "describe", "/erpc.clitest.v1.Shop/Order"},
		{target, "describe"},
		{"-d", `{"customer": "ada"}`, target, "/erpc.clitest.v1.Shop/Order"},
	} {
		expect(t, erpcCmd(t, "", cmd...), 64+12, "", "the server has no reflection service (erpc.reflection.v1.Reflection): register it with reflection.Register(srv)")
	}
	expect(t, erpcCmd(t, "", target, "health"), 64+12, "", "has no health service (erpc.health.v1.Health)")
}

func TestUsage(t *testing.T) {
	expect(t, erpcCmd(t, ""), 2, "", "usage: erpc [flags] TARGET list [SERVICE]")
	expect(t, erpcCmd(t, "", "-h"), 0, "", "usage: erpc [flags] TARGET list [SERVICE]")
	expect(t, erpcCmd(t, "", "-h"), 0, "", "a session that leaves the host is never\nplaintext by accident")
	expect(t, erpcCmd(t, "", "frob", "x"), 2, "", `"frob" is not a target (want host:port`)
	expect(t, erpcCmd(t, "", "127.0.0.1:1"), 2, "", "nothing to do at 127.0.0.1:1: after the target, want list, describe, health or a method to call")
	expect(t, erpcCmd(t, "", "127.0.0.1:1", "list", "a", "b"), 2, "", "usage: erpc [flags] TARGET list [SERVICE]")
	expect(t, erpcCmd(t, "", "127.0.0.1:1", "call"), 2, "", "usage: erpc [flags] TARGET call METHOD")
	expect(t, erpcCmd(t, "", "127.0.0.1:1", "/a.B/C", "{}"), 2, "", `"{}" after the method /a.B/C: the request goes in -d`)
	expect(t, erpcCmd(t, "", "-d", "{}", "127.0.0.1:1", "list"), 2, "", "-d is the request of a call; list takes none")
	expect(t, erpcCmd(t, "", "-d", "{}", "127.0.0.1:1", "call", "/a.B/C", "{}"), 2, "", `the request twice: -d and the argument "{}"`)
	expect(t, erpcCmd(t, "", "-format", "text", "127.0.0.1:1", "list"), 2, "", "-format text: the erpc command reads and prints json only")
	expect(t, erpcCmd(t, "", "-max-time", "soon", "127.0.0.1:1", "list"), 2, "", `invalid value "soon" for flag -max-time`)
	expect(t, erpcCmd(t, "", "-nope", "127.0.0.1:1", "list"), 2, "", "flag provided but not defined: -nope")
	expect(t, erpcCmd(t, "", "mem://x", "list"), 2, "", "mem:// endpoints live inside one process")
	expect(t, erpcCmd(t, "", "http://x:1", "list"), 2, "", "not HTTP")
	expect(t, erpcCmd(t, "", "quic://x:1", "list"), 1, "", `unknown transport "quic"`)
	expect(t, erpcCmd(t, "", "-all", "127.0.0.1:1", "health", "svc"), 2, "", "-all or a service")
	// The former order's usage errors.
	expect(t, erpcCmd(t, "", "list"), 2, "", "usage: erpc [flags] TARGET list [SERVICE]")
	expect(t, erpcCmd(t, "", "call", "127.0.0.1:1"), 2, "", "usage: erpc [flags] TARGET call METHOD")

	// Nobody there: a UDP port just closed.
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := c.LocalAddr().String()
	c.Close()
	r := erpcCmd(t, "", "-connect-timeout", "0.3", addr, "list")
	if r.code != 1 || !regexp.MustCompile(`no erpc server accepted a session at \S+ within 300ms|connect to \S+: Unavailable`).MatchString(r.stderr) {
		t.Fatalf("nobody there: %v", r)
	}
}

func TestHeaderFlag(t *testing.T) {
	var h headerFlag
	for _, v := range []string{"a=b", "X-Key: v: w", "k=v=w", "c:d=e"} {
		if err := h.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"a", "b", "X-Key", "v: w", "k", "v=w", "c", "d=e"}; !slices.Equal(h, want) {
		t.Fatalf("%q, want %q", h, want)
	}
	for _, bad := range []string{"novalue", "=v", ": v"} {
		if err := h.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

// TestGenerated regenerates the Go code of the .proto files this command
// reads (the health and reflection services, and the test service) with
// their gen.sh scripts and compares it with the files checked in (but for
// the line that names protoc's version).
func TestGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plug-ins: not in -short")
	}
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc not found: install it (Debian: apt-get install protobuf-compiler libprotobuf-dev)")
	}
	// The plug-ins, built once for the three scripts.
	bin := t.TempDir()
	for _, args := range [][]string{
		{"build", "-o", bin, "."},
		{"build", "-o", bin, "google.golang.org/protobuf/cmd/protoc-gen-go"},
	} {
		build := exec.Command("go", args...)
		build.Dir = "../protoc-gen-go-erpc"
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	version := regexp.MustCompile(`(?m)^//\s+(-\s+)?protoc\s+.*\n`)
	for _, c := range []struct{ script, outRoot, dir string }{
		{"../../health/gen.sh", "../..", "health/healthpb"},
		{"../../reflection/gen.sh", "../..", "reflection/reflectionpb"},
		{"internal/testpb/gen.sh", ".", "internal/testpb"},
	} {
		out := t.TempDir()
		gen := exec.Command(c.script, out)
		gen.Env = append(os.Environ(), "ERPC_GEN_BIN="+bin)
		if b, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c.script, err, b)
		}
		files, err := filepath.Glob(filepath.Join(c.outRoot, c.dir, "*.go"))
		if err != nil || len(files) != 2 {
			t.Fatalf("%s: %v %v", c.dir, files, err)
		}
		for _, f := range files {
			want, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(out, c.dir, filepath.Base(f)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(version.ReplaceAll(got, nil), version.ReplaceAll(want, nil)) {
				t.Errorf("%s is not what %s makes from its .proto: run it", f, c.script)
			}
		}
	}
}
