package main

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/erpc-go/erpc"
)

// These tests run the plug-in in process, on descriptors built here: they
// need no compiler.

type method struct {
	name, in, out          string
	clientStream, srvStrem bool
}

func service(name string, methods ...method) *descriptorpb.ServiceDescriptorProto {
	s := &descriptorpb.ServiceDescriptorProto{Name: proto.String(name)}
	for _, m := range methods {
		s.Method = append(s.Method, &descriptorpb.MethodDescriptorProto{
			Name:            proto.String(m.name),
			InputType:       proto.String(m.in),
			OutputType:      proto.String(m.out),
			ClientStreaming: proto.Bool(m.clientStream),
			ServerStreaming: proto.Bool(m.srvStrem),
		})
	}
	return s
}

// file is a proto3 file of package pkg with messages Req and Resp.
func file(name, pkg string, services ...*descriptorpb.ServiceDescriptorProto) *descriptorpb.FileDescriptorProto {
	return &descriptorpb.FileDescriptorProto{
		Name:    proto.String(name),
		Package: proto.String(pkg),
		Syntax:  proto.String("proto3"),
		Options: &descriptorpb.FileOptions{GoPackage: proto.String("example.com/" + strings.ReplaceAll(pkg, ".", "/") + ";" + strings.ReplaceAll(pkg, ".", ""))},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Req")},
			{Name: proto.String("Resp")},
		},
		Service: services,
	}
}

// generateInProcess runs the plug-in on files, generating all of them.
func generateInProcess(t *testing.T, param string, files ...*descriptorpb.FileDescriptorProto) *pluginpb.CodeGeneratorResponse {
	t.Helper()
	req := &pluginpb.CodeGeneratorRequest{Parameter: proto.String(param), ProtoFile: files}
	for _, f := range files {
		req.FileToGenerate = append(req.FileToGenerate, f.GetName())
	}
	var cfg config
	gen, err := options(&cfg).New(req)
	if err != nil {
		return &pluginpb.CodeGeneratorResponse{Error: proto.String(err.Error())}
	}
	if err := generate(gen, cfg); err != nil {
		gen.Error(err)
	}
	return gen.Response()
}

func oneFile(t *testing.T, resp *pluginpb.CodeGeneratorResponse) (name, content string) {
	t.Helper()
	if resp.Error != nil {
		t.Fatalf("plug-in error: %s", resp.GetError())
	}
	if len(resp.File) != 1 {
		t.Fatalf("%d files generated, want 1", len(resp.File))
	}
	return resp.File[0].GetName(), resp.File[0].GetContent()
}

// declared parses Go source and lists its top-level identifiers.
func declared(t *testing.T, src string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, parser.ParseComments)
	if err != nil {
		t.Fatalf("generated code does not parse: %v\n%s", err, src)
	}
	var names []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names = append(names, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = append(names, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

func TestSupportedFeatures(t *testing.T) {
	resp := generateInProcess(t, "", file("a.proto", "a.v1"))
	want := uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL | pluginpb.CodeGeneratorResponse_FEATURE_SUPPORTS_EDITIONS)
	if resp.GetSupportedFeatures() != want {
		t.Errorf("supported features %b, want %b", resp.GetSupportedFeatures(), want)
	}
	if resp.GetMinimumEdition() != int32(descriptorpb.Edition_EDITION_PROTO2) || resp.GetMaximumEdition() != int32(descriptorpb.Edition_EDITION_2024) {
		t.Errorf("editions %d to %d, want PROTO2 to 2024 as protoc-gen-go", resp.GetMinimumEdition(), resp.GetMaximumEdition())
	}
}

func TestNoServicesNoFile(t *testing.T) {
	resp := generateInProcess(t, "", file("a.proto", "a.v1"))
	if resp.Error != nil || len(resp.File) != 0 {
		t.Errorf("a file without services: error %q, %d files generated; want none", resp.GetError(), len(resp.File))
	}
}

// TestNames checks the generated identifiers, and that none is one of
// those protoc-gen-go-grpc generates into the same package.
func TestNames(t *testing.T) {
	resp := generateInProcess(t, "paths=source_relative", file("greet/v1/greet.proto", "greet.v1",
		service("Greeter",
			method{name: "SayHello", in: ".greet.v1.Req", out: ".greet.v1.Resp"},
			method{name: "say_bye", in: ".greet.v1.Req", out: ".greet.v1.Resp"},
			method{name: "Chat", in: ".greet.v1.Req", out: ".greet.v1.Resp", clientStream: true, srvStrem: true},
		)))
	name, src := oneFile(t, resp)
	if name != "greet/v1/greet_erpc.pb.go" {
		t.Errorf("file name %q", name)
	}
	got := strings.Join(declared(t, src), " ")
	want := "GreeterERPCClient GreeterERPCServer GreeterERPC_ChatClient GreeterERPC_ChatServer GreeterERPC_Chat_FullMethodName " +
		"GreeterERPC_SayBye_FullMethodName GreeterERPC_SayHello_FullMethodName " +
		"NewGreeterERPCClient RegisterGreeterERPCServer UnimplementedGreeterERPCServer greeterERPCClient " +
		"greeterERPCClientStream greeterERPCServerStream"
	if got != want {
		t.Errorf("declared:\n  %s\nwant\n  %s", got, want)
	}
	grpcNames := []string{"GreeterClient", "NewGreeterClient", "GreeterServer", "UnimplementedGreeterServer",
		"UnsafeGreeterServer", "RegisterGreeterServer", "Greeter_ServiceDesc", "Greeter_SayHello_FullMethodName",
		"Greeter_SayBye_FullMethodName", "Greeter_ChatClient", "Greeter_ChatServer", "greeterClient"}
	for _, g := range grpcNames {
		if strings.Contains(" "+got+" ", " "+g+" ") {
			t.Errorf("declares %s, which protoc-gen-go-grpc declares too", g)
		}
	}
	for _, s := range []string{
		`GreeterERPC_SayBye_FullMethodName   = "/greet.v1.Greeter/say_bye"`,
		`return erpc.Invoke[Resp](ctx, c.s, GreeterERPC_SayHello_FullMethodName, in)`,
		`SayHello(context.Context, *Req) (*Resp, error)`,
		`Msg: "method /greet.v1.Greeter/SayHello not implemented"`,
		`func RegisterGreeterERPCServer(srv *erpc.Server, impl GreeterERPCServer, opts ...erpc.HandlerOption) error {`,
		`Chat(ctx context.Context) (GreeterERPC_ChatClient, error)`,
		`Chat(GreeterERPC_ChatServer) error`,
	} {
		if !strings.Contains(src, s) {
			t.Errorf("generated code lacks %q:\n%s", s, src)
		}
	}
}

// TestStreamingOnlyService: a service of streaming methods only is
// generated (it used to be skipped with a comment), and one without
// methods gets a comment and no declarations.
func TestStreamingOnlyService(t *testing.T) {
	resp := generateInProcess(t, "", file("s.proto", "s.v1",
		service("Watch", method{name: "Updates", in: ".s.v1.Req", out: ".s.v1.Resp", srvStrem: true}),
		service("Empty")))
	_, src := oneFile(t, resp)
	got := strings.Join(declared(t, src), " ")
	want := "NewWatchERPCClient RegisterWatchERPCServer UnimplementedWatchERPCServer WatchERPCClient WatchERPCServer " +
		"WatchERPC_UpdatesClient WatchERPC_UpdatesServer WatchERPC_Updates_FullMethodName " +
		"watchERPCClient watchERPCClientStream watchERPCServerStream"
	if got != want {
		t.Errorf("declared:\n  %s\nwant\n  %s", got, want)
	}
	for _, s := range []string{"Updates(*Req, WatchERPC_UpdatesServer) error", "s.v1.Empty has no methods"} {
		if !strings.Contains(src, s) {
			t.Errorf("generated code lacks %q:\n%s", s, src)
		}
	}
	if strings.Contains(src, "not generated") || strings.Contains(src, "streaming methods only") {
		t.Errorf("says a method is not generated:\n%s", src)
	}
}

func TestUnknownParameter(t *testing.T) {
	resp := generateInProcess(t, "require_unimplemented_servers=false", file("a.proto", "a.v1",
		service("S", method{name: "M", in: ".a.v1.Req", out: ".a.v1.Resp"})))
	if !strings.Contains(resp.GetError(), "require_unimplemented_servers") {
		t.Errorf("an unknown parameter: error %q", resp.GetError())
	}
}

// collidingMethods returns two method names of service c.v1.S whose full
// names have the same erpc ID. They were found by a birthday search over
// "M" + base-36 counters (a million names); TestMethodIDIsErpcs checks them.
func collidingMethods(t *testing.T) (string, string) {
	t.Helper()
	const a, b = "M5pf8", "Mmrj6"
	if methodID("/c.v1.S/"+a) != methodID("/c.v1.S/"+b) {
		t.Fatalf("/c.v1.S/%s and /c.v1.S/%s do not collide", a, b)
	}
	return a, b
}

func TestCollisionInServiceRefused(t *testing.T) {
	a, b := collidingMethods(t)
	resp := generateInProcess(t, "", file("c.proto", "c.v1",
		service("S",
			method{name: "First", in: ".c.v1.Req", out: ".c.v1.Resp"},
			method{name: a, in: ".c.v1.Req", out: ".c.v1.Resp"},
			method{name: b, in: ".c.v1.Req", out: ".c.v1.Resp"},
		)))
	msg := resp.GetError()
	for _, s := range []string{"c.proto", "/c.v1.S/" + a, "/c.v1.S/" + b, "same erpc method ID", "rename one"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q does not say %q", msg, s)
		}
	}
	if len(resp.File) != 0 {
		t.Errorf("%d files generated for a service erpc cannot serve", len(resp.File))
	}
}

// TestMethodIDIsErpcs checks that the plug-in's methodID is erpc's: two
// names it finds alike, erpc.Server refuses to register together.
func TestMethodIDIsErpcs(t *testing.T) {
	a, b := collidingMethods(t)
	names := []string{"/c.v1.S/" + a, "/c.v1.S/" + b,
		// The fixture of testdata/proto/erpctest/collide.
		"/erpctest.shop.v1.Catalog/GetItem", "/erpctest.collide.v1.Rival/GetHqOMKJ"}
	for i := 0; i < len(names); i += 2 {
		if methodID(names[i]) != methodID(names[i+1]) {
			t.Fatalf("%s and %s: IDs %#x and %#x", names[i], names[i+1], methodID(names[i]), methodID(names[i+1]))
		}
		srv := erpc.NewServer()
		echo := func(_ context.Context, b []byte) ([]byte, error) { return b, nil }
		if err := srv.Handle(names[i], echo); err != nil {
			t.Fatal(err)
		}
		err := srv.Handle(names[i+1], echo)
		var e *erpc.Error
		if !errors.As(err, &e) || e.Code != erpc.AlreadyExists || !strings.Contains(e.Msg, "same ID") {
			t.Errorf("erpc registered %s beside %s: %v", names[i+1], names[i], err)
		}
	}
}
