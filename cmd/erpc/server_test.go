package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb" // the type of an Any in TestCall, for the server's registry

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/cmd/erpc/internal/testpb"
	"github.com/erpc-go/erpc/codec"
	"github.com/erpc-go/erpc/codec/protocodec"
	"github.com/erpc-go/erpc/health"
	"github.com/erpc-go/erpc/reflection"
)

// The tests run the erpc command against a server in another process:
// this test binary, started again with serverEnv set, serves over UDP
// loopback, prints its target and serves until its standard input closes.

const serverEnv = "ERPC_CLI_TEST_SERVER"

// listenEnv is where the server process listens (default 127.0.0.1:0).
const listenEnv = "ERPC_CLI_TEST_LISTEN"

// Server modes.
const (
	modeFull = "full" // the shop, health, reflection, a JSON and a raw method
	modeBare = "bare" // the shop only: no reflection, no health
)

// shop is the test service.
type shop struct {
	testpb.UnimplementedShopERPCServer
}

func (shop) Order(ctx context.Context, req *testpb.OrderRequest) (*testpb.OrderReply, error) {
	if req.GetCustomer() == "" {
		return nil, erpc.Errorf(erpc.InvalidArgument, "an order needs a customer")
	}
	var n int32
	for _, it := range req.GetItems() {
		n += it.GetQuantity()
	}
	return &testpb.OrderReply{
		Id: "o-" + req.GetCustomer(), TotalItems: n, Priority: req.GetPriority(), Extra: req.GetExtra(),
		Placed: timestamppb.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)),
	}, nil
}

func (shop) Cancel(ctx context.Context, req *testpb.CancelRequest) (*emptypb.Empty, error) {
	e, err := protocodec.ErrorWithDetails(erpc.FailedPrecondition, fmt.Sprintf("order %s has shipped", req.GetId()),
		&testpb.OrderError{Id: req.GetId(), Reason: "shipped"})
	if err != nil {
		return nil, err
	}
	return nil, e
}

func (shop) Wait(ctx context.Context, req *testpb.WaitRequest) (*emptypb.Empty, error) {
	select {
	case <-time.After(time.Duration(req.GetMillis()) * time.Millisecond):
		return &emptypb.Empty{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (shop) WhoAmI(ctx context.Context, _ *emptypb.Empty) (*testpb.Caller, error) {
	out := &testpb.Caller{Metadata: map[string]string{}}
	md, _ := erpc.IncomingMetadata(ctx)
	for k, vs := range md {
		out.Metadata[k] = strings.Join(vs, ",")
	}
	if dl, ok := ctx.Deadline(); ok {
		out.DeadlineMillis = max(time.Until(dl).Milliseconds(), 1)
	}
	return out, nil
}

type addReq struct{ A, B int }
type addResp struct{ Sum int }

// serveForTest is the server process's main.
func serveForTest(mode string) {
	srv := erpc.NewServer()
	check := func(err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
	}
	check(testpb.RegisterShopERPCServer(srv, shop{}, erpc.Background()))
	if mode == modeFull {
		h := health.NewServer()
		h.SetServingStatus("erpc.clitest.v1.Shop", health.Serving)
		h.SetServingStatus("down", health.NotServing)
		check(health.Register(srv, h))
		check(reflection.Register(srv))
		check(erpc.Register(srv, "Add", func(ctx context.Context, req *addReq) (*addResp, error) {
			return &addResp{Sum: req.A + req.B}, nil
		}, erpc.WithCodec(codec.JSON{})))
		check(srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) { return req, nil }))
		check(registerWatcher())
		check(registerStreams(srv))
		check(srv.Handle("/erpc.clitest.v1.Watcher/Peek", func(ctx context.Context, req []byte) ([]byte, error) { return nil, nil }))
	}
	listen := os.Getenv(listenEnv)
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	opt := erpc.Insecure() // a wildcard in TestTargetForms: plaintext on purpose
	if dir := os.Getenv(tlsDirEnv); dir != "" {
		cfg, err := testServerTLS(dir)
		check(err)
		opt = erpc.WithTLS(cfg)
	}
	ep, err := srv.Listen(listen, opt)
	check(err)
	fmt.Println(ep.Target())
	io.Copy(io.Discard, os.Stdin) // until the test closes it
	ep.Close()
	os.Exit(0)
}

// startServer starts a server process in mode and returns its target.
func startServer(t *testing.T, mode string) string {
	t.Helper()
	target := startServerOn(t, mode, "")
	if !strings.HasPrefix(target, "udp://127.0.0.1:") {
		t.Fatalf("the test server printed %q, not its target", target)
	}
	return target
}

// startServerOn starts a server process in mode listening on listen
// ("": 127.0.0.1:0) and returns its target.
func startServerOn(t *testing.T, mode, listen string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverEnv+"="+mode, listenEnv+"="+listen)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		s.Scan()
		line <- strings.TrimSpace(s.Text())
		io.Copy(io.Discard, stdout)
	}()
	select {
	case target := <-line:
		if !strings.HasPrefix(target, "udp://") {
			t.Fatalf("the test server printed %q, not its target", target)
		}
		return target
	case <-time.After(30 * time.Second):
		t.Fatal("the test server did not start")
	}
	return ""
}

// result is what a run of the command did.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// erpcCmd runs the built command with args and stdin.
func erpcCmd(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("erpc %s: %v", strings.Join(args, " "), err)
	}
	return r
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(lines)
	return lines
}

// registerWatcher adds to the protobuf registry, which the reflection
// service serves, a service whose .proto declares what the server does not
// all serve: Watch, a stream; Peek, served (as a raw handler); Later, not
// served. It is built here rather than in shop.proto so that testpb stays
// what protoc-gen-go-erpc makes of a service it serves whole.
func registerWatcher() error {
	str := func(s string) *string { return &s }
	yes := true
	rpc := func(name, in, out string, stream bool) *descriptorpb.MethodDescriptorProto {
		m := &descriptorpb.MethodDescriptorProto{Name: str(name), InputType: str(in), OutputType: str(out)}
		if stream {
			m.ServerStreaming = &yes
		}
		return m
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: str("erpc/clitest/v1/watch.proto"), Package: str("erpc.clitest.v1"), Syntax: str("proto3"),
		Dependency: []string{"erpc/clitest/v1/shop.proto", "google/protobuf/empty.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: str("Watcher"), Method: []*descriptorpb.MethodDescriptorProto{
			rpc("Watch", ".erpc.clitest.v1.WaitRequest", ".erpc.clitest.v1.Caller", true),
			rpc("Peek", ".google.protobuf.Empty", ".erpc.clitest.v1.Caller", false),
			rpc("Later", ".google.protobuf.Empty", ".google.protobuf.Empty", false),
		}}},
	}, protoregistry.GlobalFiles)
	if err != nil {
		return err
	}
	return protoregistry.GlobalFiles.RegisterFile(fd)
}
