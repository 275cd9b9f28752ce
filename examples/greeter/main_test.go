package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	ghealthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/codec/protocodec"
	"github.com/erpc-go/erpc/examples/greeter/greeterpb"
	"github.com/erpc-go/erpc/health"
	"github.com/erpc-go/erpc/reflection"
)

// both starts one Greeter on a gRPC server (TCP) and an erpc server (UDP),
// on loopback, and returns a client of each.
func both(t *testing.T) (impl *Greeter, g greeterpb.GreeterClient, e greeterpb.GreeterERPCClient, es *erpc.Session, gc *grpc.ClientConn) {
	t.Helper()
	impl = NewGreeter()
	now := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
	impl.now = func() time.Time { now = now.Add(time.Second); return now }
	s, err := start(impl, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.stop(ctx)
	})
	if got := s.erpc.Target(); !strings.HasPrefix(got, "udp://127.0.0.1:") {
		t.Fatalf("erpc target %q", got)
	}
	gc, err = grpc.NewClient(s.grpcLis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	es, err = erpc.Dial(ctx, s.erpc.Target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Close() })
	return impl, greeterpb.NewGreeterClient(gc), greeterpb.NewGreeterERPCClient(es), es, gc
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestSameAnswersBothWays calls the one implementation over gRPC and over
// erpc: the same answers, and the same state behind them.
func TestSameAnswersBothWays(t *testing.T) {
	_, g, e, _, _ := both(t)
	c := ctx(t)

	gr, err := g.SayHello(c, &greeterpb.HelloRequest{Name: "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	er, err := e.SayHello(c, &greeterpb.HelloRequest{Name: "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if gr.GetMessage() != "Hello, Ada!" || !proto.Equal(gr, er) {
		t.Fatalf("SayHello: gRPC %v, erpc %v", gr, er)
	}

	// Two greetings, one over each protocol: both clients see the count
	// of the one implementation.
	gl, err := g.LastGreeted(c, &greeterpb.LastGreetedRequest{Name: "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	el, err := e.LastGreeted(c, &greeterpb.LastGreetedRequest{Name: "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if gl.GetCount() != 2 || !proto.Equal(gl, el) {
		t.Fatalf("LastGreeted: gRPC %v, erpc %v", gl, el)
	}
	if want := time.Date(2025, 1, 2, 3, 4, 7, 6000, time.UTC); !gl.GetAt().AsTime().Equal(want) {
		t.Fatalf("LastGreeted at %v, want %v", gl.GetAt().AsTime(), want)
	}
}

// TestErrorsBothWays: an error keeps its code, message and details on
// both protocols, whether the handler returned a gRPC status (SayHello)
// or an *erpc.Error (LastGreeted).
func TestErrorsBothWays(t *testing.T) {
	_, g, e, _, _ := both(t)
	c := ctx(t)
	wantDetail := &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
		{Field: "name", Description: "must not be empty"},
	}}

	// A gRPC status, over gRPC and over erpc.
	_, gerr := g.SayHello(c, &greeterpb.HelloRequest{})
	st, _ := status.FromError(gerr)
	if st.Code() != codes.InvalidArgument || len(st.Details()) != 1 || !proto.Equal(st.Details()[0].(proto.Message), wantDetail) {
		t.Fatalf("gRPC SayHello(''): %v, details %v", gerr, st.Details())
	}
	_, eerr := e.SayHello(c, &greeterpb.HelloRequest{})
	var ee *erpc.Error
	if !errors.As(eerr, &ee) || ee.Code != erpc.InvalidArgument || ee.Msg != st.Message() {
		t.Fatalf("erpc SayHello(''): %v, want InvalidArgument: %s", eerr, st.Message())
	}
	if ds, err := protocodec.Details(ee); err != nil || len(ds) != 1 || !proto.Equal(ds[0], wantDetail) {
		t.Fatalf("erpc SayHello('') details: %v, %v", ds, err)
	}

	// An *erpc.Error, over erpc and over gRPC.
	_, eerr = e.LastGreeted(c, &greeterpb.LastGreetedRequest{Name: "Bob"})
	if !errors.As(eerr, &ee) || ee.Code != erpc.NotFound || ee.Msg != `"Bob" was never greeted` {
		t.Fatalf("erpc LastGreeted(Bob): %v", eerr)
	}
	_, gerr = g.LastGreeted(c, &greeterpb.LastGreetedRequest{Name: "Bob"})
	if st, _ := status.FromError(gerr); st.Code() != codes.NotFound || st.Message() != ee.Msg {
		t.Fatalf("gRPC LastGreeted(Bob): %v, want NotFound: %s", gerr, ee.Msg)
	}

	// describe, the command's error text, is the same for both.
	if describe(gerr) != describe(eerr) {
		t.Fatalf("describe:\n%s\n%s", describe(gerr), describe(eerr))
	}
	_, gerr = g.SayHello(c, &greeterpb.HelloRequest{})
	_, eerr = e.SayHello(c, &greeterpb.HelloRequest{})
	if d := describe(gerr); d != describe(eerr) || !strings.Contains(d, "detail google.rpc.BadRequest") {
		t.Fatalf("describe:\n%s\n%s", d, describe(eerr))
	}
}

// TestHello runs the client command's calls over each protocol.
func TestHello(t *testing.T) {
	_, g, e, _, _ := both(t)
	for name, c := range map[string]client{"grpc": g, "erpc": e} {
		var out bytes.Buffer
		if err := hello(ctx(t), c, "Ada", &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !regexp.MustCompile(`^Hello, Ada!\ngreeted "Ada" \d times, last at 2025-`).MatchString(out.String()) {
			t.Errorf("%s: %q", name, out.String())
		}
		err := hello(ctx(t), c, "", &out)
		if err == nil || !strings.HasPrefix(err.Error(), "SayHello: code InvalidArgument: say hello to whom?") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestHealthAndReflection: each side has its protocol's health service,
// and erpc's reflection lists the greeter.
func TestHealthAndReflection(t *testing.T) {
	_, _, _, es, gc := both(t)
	c := ctx(t)
	for _, svc := range []string{"", "greeter.v1.Greeter"} {
		if st, err := health.Check(c, es, svc); err != nil || st != health.Serving {
			t.Errorf("erpc health %q: %v, %v", svc, st, err)
		}
		r, err := ghealthpb.NewHealthClient(gc).Check(c, &ghealthpb.HealthCheckRequest{Service: svc})
		if err != nil || r.GetStatus() != ghealthpb.HealthCheckResponse_SERVING {
			t.Errorf("gRPC health %q: %v, %v", svc, r, err)
		}
	}
	rc := reflection.NewClient(es)
	m, err := rc.Method(c, greeterpb.GreeterERPC_SayHello_FullMethodName)
	if err != nil {
		t.Fatal(err)
	}
	if m.Descriptor == nil || m.Request.FullName() != "greeter.v1.HelloRequest" || m.Response.FullName() != "greeter.v1.HelloReply" {
		t.Fatalf("reflection: %+v", m)
	}
}

// TestGenerated regenerates greeterpb with gen.sh and compares it with the
// files checked in (but for the line that names protoc's version).
func TestGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plug-ins: not in -short")
	}
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc not found: install it (Debian: apt-get install protobuf-compiler libprotobuf-dev)")
	}
	out := t.TempDir()
	cmd := exec.Command("./gen.sh", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, b)
	}
	version := regexp.MustCompile(`(?m)^//\s+(-\s+)?protoc\s+.*\n`)
	files, err := filepath.Glob(filepath.Join("greeterpb", "*.go"))
	if err != nil || len(files) != 3 {
		t.Fatalf("greeterpb: %v %v", files, err)
	}
	for _, f := range files {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(version.ReplaceAll(got, nil), version.ReplaceAll(want, nil)) {
			t.Errorf("%s is not what gen.sh makes from the .proto: run go generate", f)
		}
	}
}

// TestInsecureFlag: serving erpc on an address other hosts can reach is
// refused without -insecure, with a message that names the way out, and
// works with it (the flag gives erpc.Insecure to Listen and Dial).
func TestInsecureFlag(t *testing.T) {
	if _, err := start(NewGreeter(), "127.0.0.1:0", "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "Insecure") {
		t.Fatalf("plaintext on 0.0.0.0 without -insecure: %v, want a refusal naming Insecure", err)
	}
	s, err := start(NewGreeter(), "127.0.0.1:0", "0.0.0.0:0", erpc.Insecure())
	if err != nil {
		t.Fatalf("with erpc.Insecure: %v", err)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.stop(c)
	}()
	port := s.erpc.Addr().Port()
	c, closeClient, err := dial(ctx(t), "", fmt.Sprintf("127.0.0.1:%d", port), nil, erpc.Insecure())
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient()
	var out bytes.Buffer
	if err := hello(ctx(t), c, "Ada", &out); err != nil || !strings.HasPrefix(out.String(), "Hello, Ada!") {
		t.Fatalf("hello over the -insecure server: %v %q", err, out.String())
	}
}
