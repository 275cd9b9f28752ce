package main

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// The command's streams, against the test server's erpc.clitest.v1.Streams
// (streamserver_test.go).

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// countLines is what Count prints for n replies.
func countLines(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf(`{"id":"n-%d","totalItems":%d}`, i, i))
	}
	return out
}

// canceledStreams is the test server's count of stream handlers whose
// stream ended under them, once it reaches want (or after 10 s).
func canceledStreams(t *testing.T, target string, want int) int {
	t.Helper()
	var n int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := erpcCmd(t, "", target, "StreamsCanceled")
		if r.code != 0 {
			t.Fatalf("StreamsCanceled: %v", r)
		}
		fmt.Sscan(r.stdout, &n)
		if n >= want || time.Now().After(deadline) {
			return n
		}
	}
}

// TestStreamServerSide: a server stream prints each reply on a line, in
// order; the request from -d or standard input; none at all is {}.
func TestStreamServerSide(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	for _, n := range []int{0, 1, 7, 300} {
		r := erpcCmd(t, "", "-d", fmt.Sprintf(`{"millis": %d}`, n), target, "erpc.clitest.v1.Streams/Count")
		if got := lines(r.stdout); r.code != 0 || !slices.Equal(got, countLines(n)) || r.stderr != "" {
			t.Fatalf("Count %d: %v", n, r)
		}
	}
	r := erpcCmd(t, `{"millis": 2}`, "-d", "@", target, "erpc.clitest.v1.Streams.Count")
	if r.code != 0 || !slices.Equal(lines(r.stdout), countLines(2)) {
		t.Fatalf("Count from standard input: %v", r)
	}
	expect(t, erpcCmd(t, "", target, "erpc.clitest.v1.Streams.Count"), 0, "", "") // {}: no replies
	// One request: a server stream takes one message.
	expect(t, erpcCmd(t, "{} {}", "-d", "@", target, "erpc.clitest.v1.Streams.Count"), 1, "",
		"the request is not JSON of type erpc.clitest.v1.WaitRequest: /erpc.clitest.v1.Streams/Count is unary: it takes one request message, and the request holds 2")
}

// TestStreamClientSide: a client stream sends each message of -d or of
// standard input, half-closes at their end and prints the one answer.
func TestStreamClientSide(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	in := `{"customer": "a", "items": [{"quantity": 2}]}
{"customer": "b", "items": [{"quantity": 3}, {"quantity": 4}]}
{"customer": "c"}
`
	want := `{"id":"a+b+c","totalItems":9}` + "\n"
	for _, args := range [][]string{
		{"-d", "@", target, "erpc.clitest.v1.Streams/Sum"},
		{"-d", strings.ReplaceAll(in, "\n", " "), target, "erpc.clitest.v1.Streams/Sum"},
	} {
		stdin := ""
		if args[1] == "@" {
			stdin = in
		}
		if r := erpcCmd(t, stdin, args...); r.code != 0 || r.stdout != want {
			t.Fatalf("Sum %q: %v", args[:2], r)
		}
	}
	// No -d: no messages.
	if r := erpcCmd(t, "", target, "erpc.clitest.v1.Streams/Sum"); r.code != 0 || r.stdout != "{}\n" {
		t.Fatalf("Sum of nothing: %v", r)
	}
	// A stream no descriptor describes: each JSON value as its bytes.
	if r := erpcCmd(t, `{"a": 1} [2, 3] "x"`, "-d", "@", target, "Lines"); r.code != 0 || r.stdout != "{\"a\": 1}\n[2, 3]\n\"x\"\n" {
		t.Fatalf("Lines: %v", r)
	}
}

// TestStreamBidiInterleaved: through pipes, the command sends each message
// as it reads it and prints each answer as it comes: one line in, one
// line out, before standard input ends.
func TestStreamBidiInterleaved(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliBin, "-d", "@", target, "erpc.clitest.v1.Streams/Chat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			got <- s.Text()
		}
		close(got)
	}()
	for i := range 20 {
		// Split across writes, to be read as it comes.
		fmt.Fprintf(stdin, `{"id":`)
		fmt.Fprintf(stdin, "\"m-%d\"}\n", i)
		select {
		case line := <-got:
			if want := fmt.Sprintf(`{"id":"m-%d","reason":"echo"}`, i); line != want {
				t.Fatalf("answer %d: %q, want %q (stderr: %s)", i, line, want, stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to message %d before standard input ended (stderr: %s)", i, stderr.String())
		}
	}
	stdin.Close()
	if line, open := <-got; open {
		t.Fatalf("an answer too many: %q", line)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the command: %v (stderr: %s)", err, stderr.String())
	}
}

// TestStreamErrorStatus: a stream that ends with an error prints its
// replies, then the status on standard error, whose code is the exit
// status; -v prints the metadata both ways, the trailers too.
func TestStreamErrorStatus(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	r := erpcCmd(t, "", "-H", "x-fail: 9", "-d", `{"millis": 3}`, target, "erpc.clitest.v1.Streams/Count")
	expect(t, r, 64+9, "", "call /erpc.clitest.v1.Streams/Count at "+target+": FailedPrecondition: failed after 3 replies")
	if !slices.Equal(lines(r.stdout), countLines(3)) {
		t.Fatalf("the replies before the error: %v", r)
	}
	r = erpcCmd(t, "", "-v", "-H", "x-fail: 5", "-d", `{"millis": 2}`, target, "erpc.clitest.v1.Streams/Count")
	for _, want := range []string{
		"Resolved method descriptor:\nrpc Count(erpc.clitest.v1.WaitRequest) returns (stream erpc.clitest.v1.OrderReply);\n",
		"\nRequest metadata to send:\nx-fail: 5\n",
		"\nResponse headers received:\nx-count: 2\n",
		"\nResponse contents:\n" + countLines(2)[1] + "\n",
		"\nResponse trailers received:\nx-sent: 2\n",
	} {
		expect(t, r, 64+5, want, "NotFound: failed after 2 replies")
	}
	r = erpcCmd(t, "", "-v", "-d", `{"millis": 2}`, target, "erpc.clitest.v1.Streams/Count")
	expect(t, r, 0, "\nResponse trailers received:\nx-sent: 2\nSent 1 request and received 2 responses\n", "")
	// Unary calls print the same sections.
	r = erpcCmd(t, "", "-v", "-d", `{"customer": "ada"}`, target, "erpc.clitest.v1.Shop/Order")
	expect(t, r, 0, "\nResponse headers received:\n(empty)\n\nResponse contents:\n{\n  \"id\": \"o-ada\",", "")
	expect(t, r, 0, "\nResponse trailers received:\n(empty)\nSent 1 request and received 1 response\n", "")
}

// TestStreamMaxTime: -max-time ends a stream that never ends, on both
// sides: the handler's stream ends under it.
func TestStreamMaxTime(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	r := erpcCmd(t, "", "-max-time", "0.5", target, "erpc.clitest.v1.Streams/Forever")
	expect(t, r, 64+4, `{"deadlineMillis":"1"}`+"\n", "DeadlineExceeded")
	expect(t, r, 64+4, "", "(-max-time 500ms)")
	if n := canceledStreams(t, target, 1); n != 1 {
		t.Fatalf("%d handlers saw their stream end, want 1", n)
	}
	// -deadline, when given, bounds a stream too.
	r = erpcCmd(t, "", "-deadline", "0.3", "-max-time", "20", target, "erpc.clitest.v1.Streams/Forever")
	expect(t, r, 64+4, `{"deadlineMillis":"1"}`+"\n", "(-deadline 300ms)")
	if n := canceledStreams(t, target, 2); n != 2 {
		t.Fatalf("%d handlers saw their stream end, want 2", n)
	}
}

// TestStreamBadInputMidway: a message that is not JSON of the method's
// type, after good ones, cancels the stream (its handler sees it end), and
// the command says which message and exits 1.
func TestStreamBadInputMidway(t *testing.T) {
	t.Parallel()
	target := startServer(t, modeFull)
	cases := []struct{ method, stdin, stderr string }{
		{"erpc.clitest.v1.Streams/Sum", `{"customer": "a"}` + "\n" + `{"customer": }` + "\n",
			"message 2 on standard input is not JSON of type erpc.clitest.v1.OrderRequest: invalid character '}' looking for beginning of value; the stream /erpc.clitest.v1.Streams/Sum is canceled"},
		{"erpc.clitest.v1.Streams/Sum", `{"customer": "a"} {"customer": "b"} {"customr": "c"}`,
			`message 3 on standard input is not JSON of type erpc.clitest.v1.OrderRequest: proto:`},
		{"erpc.clitest.v1.Streams/Chat", `{"id": "a"} {"id": "b"`,
			"message 2 on standard input is not JSON of type erpc.clitest.v1.CancelRequest: unexpected end of JSON input; the stream /erpc.clitest.v1.Streams/Chat is canceled"},
	}
	for i, c := range cases {
		r := erpcCmd(t, c.stdin, "-d", "@", target, c.method)
		expect(t, r, 1, "", c.stderr)
		if n := canceledStreams(t, target, i+1); n != i+1 {
			t.Fatalf("case %d: %d handlers saw their stream end, want %d", i, n, i+1)
		}
	}
}
