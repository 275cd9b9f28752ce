package reflection_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/apipb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/codec"
	_ "github.com/erpc-go/erpc/codec/protocodec"
	"github.com/erpc-go/erpc/health"
	"github.com/erpc-go/erpc/reflection"
	"github.com/erpc-go/erpc/reflection/reflectionpb"
)

type jsonReq struct{ A, B int }
type jsonResp struct{ Sum int }

// newServer serves, over mem://, the health service, reflection, and
// methods of every kind: typed protobuf ones (one whose types import other
// files), a JSON one and a raw one; one is registered after reflection.
func newServer(t *testing.T, withReflection bool) *erpc.Session {
	t.Helper()
	srv := erpc.NewServer()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(health.Register(srv, health.NewServer()))
	must(erpc.Register(srv, "/test.v1.Apis/Bump", func(ctx context.Context, req *apipb.Api) (*apipb.Api, error) {
		req.Version += "+1"
		return req, nil
	}, erpc.Background()))
	if withReflection {
		must(reflection.Register(srv))
	}
	must(erpc.Register(srv, "Greet", func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return wrapperspb.String("hello, " + req.GetValue()), nil
	}))
	must(erpc.Register(srv, "Add", func(ctx context.Context, req *jsonReq) (*jsonResp, error) {
		return &jsonResp{Sum: req.A + req.B}, nil
	}, erpc.WithCodec(codec.JSON{})))
	must(srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) { return req, nil }))
	ep, err := srv.Listen(fmt.Sprintf("mem://reflection-%d", time.Now().UnixNano()))
	must(err)
	t.Cleanup(func() { ep.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	must(err)
	t.Cleanup(func() { s.Close() })
	return s
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestListMethods(t *testing.T) {
	s := newServer(t, true)
	got, err := reflection.NewClient(s).ListMethods(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []erpc.MethodInfo{
		{Name: "/erpc.health.v1.Health/Check", RequestType: "erpc.health.v1.HealthCheckRequest", ResponseType: "erpc.health.v1.HealthCheckResponse", Codec: "proto"},
		{Name: "/erpc.health.v1.Health/List", RequestType: "erpc.health.v1.HealthListRequest", ResponseType: "erpc.health.v1.HealthListResponse", Codec: "proto"},
		{Name: reflection.FileByFilenameMethod, RequestType: "erpc.reflection.v1.FileByFilenameRequest", ResponseType: "erpc.reflection.v1.FileDescriptorResponse", Codec: "proto", Background: true},
		{Name: reflection.FileContainingSymbolMethod, RequestType: "erpc.reflection.v1.FileContainingSymbolRequest", ResponseType: "erpc.reflection.v1.FileDescriptorResponse", Codec: "proto", Background: true},
		{Name: reflection.ListMethodsMethod, RequestType: "erpc.reflection.v1.ListMethodsRequest", ResponseType: "erpc.reflection.v1.ListMethodsResponse", Codec: "proto", Background: true},
		{Name: "/test.v1.Apis/Bump", RequestType: "google.protobuf.Api", ResponseType: "google.protobuf.Api", Codec: "proto", Background: true},
		{Name: "Add", Codec: "json"},
		{Name: "Echo"},
		{Name: "Greet", RequestType: "google.protobuf.StringValue", ResponseType: "google.protobuf.StringValue", Codec: "proto"},
	}
	if len(got) != len(want) {
		t.Fatalf("ListMethods:\n got %+v\nwant %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("method %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// files calls FileContainingSymbol directly and returns the files' paths
// in the order sent.
func files(t *testing.T, s *erpc.Session, known []string, symbols ...string) []string {
	t.Helper()
	resp, err := reflectionpb.NewReflectionERPCClient(s).FileContainingSymbol(testCtx(t),
		&reflectionpb.FileContainingSymbolRequest{Symbols: symbols, KnownFiles: known})
	if err != nil {
		t.Fatal(err)
	}
	return paths(t, resp)
}

func paths(t *testing.T, resp *reflectionpb.FileDescriptorResponse) []string {
	t.Helper()
	var out []string
	for _, b := range resp.GetFileDescriptorProto() {
		fdp := new(descriptorpb.FileDescriptorProto)
		if err := proto.Unmarshal(b, fdp); err != nil {
			t.Fatal(err)
		}
		out = append(out, fdp.GetName())
	}
	return out
}

// TestFileClosure: a file comes with its imports, transitively, each once,
// after the files it imports; known files (and theirs) are left out.
func TestFileClosure(t *testing.T) {
	s := newServer(t, true)
	got := files(t, s, nil, "google.protobuf.Api")
	pos := map[string]int{}
	for i, p := range got {
		if _, dup := pos[p]; dup {
			t.Fatalf("%s sent twice: %v", p, got)
		}
		pos[p] = i
	}
	// api.proto imports source_context.proto and type.proto, which
	// imports any.proto and source_context.proto.
	for _, p := range []string{"google/protobuf/api.proto", "google/protobuf/type.proto",
		"google/protobuf/any.proto", "google/protobuf/source_context.proto"} {
		if _, ok := pos[p]; !ok {
			t.Fatalf("%s missing from %v", p, got)
		}
	}
	for _, p := range got {
		fd, err := protoregistry.GlobalFiles.FindFileByPath(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range fd.Imports().Len() {
			if imp := fd.Imports().Get(i).Path(); pos[imp] > pos[p] {
				t.Errorf("%s sent after %s, which imports it: %v", imp, p, got)
			}
		}
	}

	// Symbols of every kind find their file; known files are left out.
	for sym, want := range map[string]string{
		"erpc.health.v1.Health":                              "erpc/health/v1/health.proto",
		"erpc.health.v1.Health.Check":                        "erpc/health/v1/health.proto",
		"erpc.health.v1.HealthCheckResponse.ServingStatus":   "erpc/health/v1/health.proto",
		"erpc.health.v1.HealthCheckResponse.SERVICE_UNKNOWN": "erpc/health/v1/health.proto",
		"google.protobuf.StringValue":                        "google/protobuf/wrappers.proto",
	} {
		if got := files(t, s, nil, sym); len(got) != 1 || got[0] != want {
			t.Errorf("FileContainingSymbol(%s) = %v, want [%s]", sym, got, want)
		}
	}
	if got := files(t, s, []string{"google/protobuf/type.proto", "google/protobuf/source_context.proto"}, "google.protobuf.Api"); len(got) != 1 || got[0] != "google/protobuf/api.proto" {
		t.Errorf("with type.proto known: %v, want only api.proto", got)
	}
	// Two symbols of one file: the file once.
	if got := files(t, s, nil, "erpc.health.v1.Health", "erpc.health.v1.HealthCheckRequest"); len(got) != 1 {
		t.Errorf("two symbols of one file: %v", got)
	}

	resp, err := reflectionpb.NewReflectionERPCClient(s).FileByFilename(testCtx(t),
		&reflectionpb.FileByFilenameRequest{Filenames: []string{"google/protobuf/type.proto"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(t, resp); len(got) != 3 || got[2] != "google/protobuf/type.proto" {
		t.Errorf("FileByFilename(type.proto) = %v", got)
	}
}

func TestNotFound(t *testing.T) {
	s := newServer(t, true)
	c := reflectionpb.NewReflectionERPCClient(s)
	ctx := testCtx(t)
	_, err := c.FileContainingSymbol(ctx, &reflectionpb.FileContainingSymbolRequest{Symbols: []string{"no.such.Thing"}})
	if erpc.CodeOf(err) != erpc.NotFound || !strings.Contains(err.Error(), "no.such.Thing") {
		t.Errorf("unknown symbol: %v", err)
	}
	_, err = c.FileByFilename(ctx, &reflectionpb.FileByFilenameRequest{Filenames: []string{"no/such.proto"}})
	if erpc.CodeOf(err) != erpc.NotFound || !strings.Contains(err.Error(), "no/such.proto") {
		t.Errorf("unknown file: %v", err)
	}

	rc := reflection.NewClient(s)
	if _, err := rc.Resolver(ctx).FindMessageByURL("type.googleapis.com/no.such.Thing"); err != protoregistry.NotFound {
		t.Errorf("Resolver of an unknown type: %v", err)
	}
	if _, err := rc.Resolver(ctx).FindMessageByName("erpc.health.v1.Health"); err != protoregistry.NotFound {
		t.Errorf("Resolver of a service as a message: %v", err)
	}
	if _, err := rc.FindSymbol(ctx, "no.such.Thing"); erpc.CodeOf(err) != erpc.NotFound {
		t.Errorf("FindSymbol of an unknown symbol: %v", err)
	}
	if _, err := rc.FindMessage(ctx, "erpc.health.v1.Health"); erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(err.Error(), "service") {
		t.Errorf("FindMessage of a service: %v", err)
	}
	_, err = rc.Method(ctx, "/erpc.health.v1.Health/check")
	if erpc.CodeOf(err) != erpc.NotFound || !strings.Contains(err.Error(), "did you mean /erpc.health.v1.Health/Check") {
		t.Errorf("Method with the wrong case: %v", err)
	}
	_, err = rc.Method(ctx, "erpc.health.v1.Health/Check")
	if erpc.CodeOf(err) != erpc.NotFound || !strings.Contains(err.Error(), "did you mean /erpc.health.v1.Health/Check") {
		t.Errorf("Method without its slash: %v", err)
	}
	_, err = rc.Method(ctx, "Nope")
	if erpc.CodeOf(err) != erpc.NotFound || !strings.Contains(err.Error(), `"/package.Service/Method"`) {
		t.Errorf("Method of a plain unknown name: %v", err)
	}
}

func TestNoReflection(t *testing.T) {
	s := newServer(t, false)
	_, err := reflection.NewClient(s).ListMethods(testCtx(t))
	if !errors.Is(err, erpc.ErrUnimplemented) || !strings.Contains(err.Error(), "reflection.Register") {
		t.Fatalf("ListMethods without reflection: %v", err)
	}
}

// TestDynamicCall is what a tool does: describe a method from reflection
// alone, build its request from JSON, call it, and read the answer.
func TestDynamicCall(t *testing.T) {
	s := newServer(t, true)
	ctx := testCtx(t)
	rc := reflection.NewClient(s)
	m, err := rc.Method(ctx, "/test.v1.Apis/Bump")
	if err != nil {
		t.Fatal(err)
	}
	if m.Request == nil || m.Request.FullName() != "google.protobuf.Api" || m.Response.FullName() != "google.protobuf.Api" {
		t.Fatalf("method %+v", m)
	}
	if m.Request == (&apipb.Api{}).ProtoReflect().Descriptor() {
		t.Fatal("the client's descriptor is the program's own, not the server's")
	}
	if m.Descriptor != nil {
		t.Fatalf("a service the registry lacks has a method descriptor: %v", m.Descriptor)
	}

	req := dynamicpb.NewMessage(m.Request)
	// An Any of a type no file fetched so far defines: the resolver
	// fetches it.
	in := `{"name":"svc","version":"1","methods":[{"name":"M","requestTypeUrl":"type.googleapis.com/x.Y"}],"sourceContext":{"fileName":"a.proto"},
		"options":[{"name":"o","value":{"@type":"type.googleapis.com/google.protobuf.StringValue","value":"x"}}]}`
	if _, err := rc.Files().FindFileByPath("google/protobuf/wrappers.proto"); err == nil {
		t.Fatal("wrappers.proto fetched already")
	}
	if err := (protojson.UnmarshalOptions{Resolver: rc.Resolver(ctx)}).Unmarshal([]byte(in), req); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Call(ctx, m.Name, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := dynamicpb.NewMessage(m.Response)
	if err := proto.Unmarshal(out, resp); err != nil {
		t.Fatal(err)
	}
	js, err := protojson.MarshalOptions{Resolver: rc.Resolver(ctx)}.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), "google.protobuf.StringValue") {
		t.Fatalf("the Any is lost: %s", js)
	}
	var got, want apipb.Api
	if err := protojson.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	want.Version = "1+1"
	if !proto.Equal(&got, &want) {
		t.Fatalf("answer %s, want %v", js, &want)
	}

	// A generated service's method has its descriptor.
	m, err = rc.Method(ctx, health.CheckMethod)
	if err != nil {
		t.Fatal(err)
	}
	if m.Descriptor == nil || m.Descriptor.FullName() != "erpc.health.v1.Health.Check" || m.Descriptor.Input() != m.Request {
		t.Fatalf("health Check: %+v", m)
	}
	// Methods without protobuf types have none.
	for _, name := range []string{"Add", "Echo"} {
		m, err := rc.Method(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if m.Request != nil || m.Response != nil || m.Descriptor != nil {
			t.Errorf("%s: %+v", name, m)
		}
	}
	// Every file fetched once and kept.
	var n int
	rc.Files().RangeFiles(func(protoreflect.FileDescriptor) bool { n++; return true })
	if n < 5 {
		t.Errorf("%d files kept", n)
	}
}

func TestSplitMethodName(t *testing.T) {
	for _, c := range []struct {
		in, svc, m string
		ok         bool
	}{
		{"/a.B/C", "a.B", "C", true},
		{"/B/C", "B", "C", true},
		{"a.B/C", "", "", false},
		{"/a.B/", "", "", false},
		{"//C", "", "", false},
		{"/a/b/c", "", "", false},
		{"Echo", "", "", false},
	} {
		svc, m, ok := reflection.SplitMethodName(c.in)
		if svc != c.svc || m != c.m || ok != c.ok {
			t.Errorf("SplitMethodName(%q) = %q, %q, %v", c.in, svc, m, ok)
		}
	}
}
