package main

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// every is one method of each shape.
func every(pkg string) []method {
	in, out := "."+pkg+".Req", "."+pkg+".Resp"
	return []method{
		{name: "Get", in: in, out: out},
		{name: "Watch", in: in, out: out, srvStrem: true},
		{name: "Upload", in: in, out: out, clientStream: true},
		{name: "Chat", in: in, out: out, clientStream: true, srvStrem: true},
	}
}

// TestEveryShapeNative: without grpc_compat, every shape is generated
// with erpc's typed streams, and the file imports neither grpc nor
// contrib/grpc.
func TestEveryShapeNative(t *testing.T) {
	_, src := oneFile(t, generateInProcess(t, "", file("s.proto", "s.v1", service("Svc", every("s.v1")...))))
	for _, s := range []string{
		"Get(ctx context.Context, in *Req) (*Resp, error)",
		"Watch(ctx context.Context, in *Req) (SvcERPC_WatchClient, error)",
		"Upload(ctx context.Context) (SvcERPC_UploadClient, error)",
		"Chat(ctx context.Context) (SvcERPC_ChatClient, error)",
		"Get(context.Context, *Req) (*Resp, error)",
		"Watch(*Req, SvcERPC_WatchServer) error",
		"Upload(SvcERPC_UploadServer) error",
		"Chat(SvcERPC_ChatServer) error",
		"CloseAndRecv() (*Resp, error)",
		"SendAndClose(*Resp) error",
		"srv.HandleStream(SvcERPC_Chat_FullMethodName, func(s erpc.ServerStream) error {",
	} {
		if !strings.Contains(src, s) {
			t.Errorf("generated code lacks %q:\n%s", s, src)
		}
	}
	if strings.Contains(src, "google.golang.org/grpc") || strings.Contains(src, "contrib/grpc") {
		t.Errorf("native code imports gRPC:\n%s", src)
	}
}

// TestEveryShapeGRPCCompat: with grpc_compat=true the client and server
// methods have protoc-gen-go-grpc's signatures, character for character
// (the e2e test compiles one type against both), and no erpc-native
// stream type is declared.
func TestEveryShapeGRPCCompat(t *testing.T) {
	_, src := oneFile(t, generateInProcess(t, "grpc_compat=true", file("s.proto", "s.v1", service("Svc", every("s.v1")...))))
	for _, s := range []string{
		"Get(ctx context.Context, in *Req, opts ...grpc.CallOption) (*Resp, error)",
		"Watch(ctx context.Context, in *Req, opts ...grpc.CallOption) (grpc.ServerStreamingClient[Resp], error)",
		"Upload(ctx context.Context, opts ...grpc.CallOption) (grpc.ClientStreamingClient[Req, Resp], error)",
		"Chat(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[Req, Resp], error)",
		"Get(context.Context, *Req) (*Resp, error)",
		"Watch(*Req, grpc.ServerStreamingServer[Resp]) error",
		"Upload(grpc.ClientStreamingServer[Req, Resp]) error",
		"Chat(grpc.BidiStreamingServer[Req, Resp]) error",
		// Metadata the gRPC way in handlers, and from call options.
		"return impl.Get(grpc1.ServerContext(ctx, SvcERPC_Get_FullMethodName), in)",
		"erpc.Invoke[Resp](grpc1.CallContext(ctx, opts...), c.s, SvcERPC_Get_FullMethodName, in)",
		"return grpc1.ServeServerStream[Req, Resp](s, impl.Watch)",
		"return impl.Chat(grpc1.NewServerStream[Req, Resp](s))",
	} {
		if !strings.Contains(src, s) {
			t.Errorf("generated code lacks %q:\n%s", s, src)
		}
	}
	got := strings.Join(declared(t, src), " ")
	want := "NewSvcERPCClient RegisterSvcERPCServer SvcERPCClient SvcERPCServer SvcERPC_Chat_FullMethodName " +
		"SvcERPC_Get_FullMethodName SvcERPC_Upload_FullMethodName SvcERPC_Watch_FullMethodName " +
		"UnimplementedSvcERPCServer svcERPCClient"
	if got != want {
		t.Errorf("declared:\n  %s\nwant\n  %s", got, want)
	}
}

func TestGRPCCompatValue(t *testing.T) {
	resp := generateInProcess(t, "grpc_compat=maybe", file("a.proto", "a.v1", service("S", every("a.v1")...)))
	if !strings.Contains(resp.GetError(), "grpc_compat=maybe: want true or false") {
		t.Errorf("grpc_compat=maybe: error %q", resp.GetError())
	}
	for _, param := range []string{"grpc_compat", "grpc_compat=true", "grpc_compat=false"} {
		_, src := oneFile(t, generateInProcess(t, param, file("a.proto", "a.v1", service("S", every("a.v1")...))))
		if want := param != "grpc_compat=false"; strings.Contains(src, "grpc.CallOption") != want {
			t.Errorf("%s: gRPC's shapes %v, want %v", param, !want, want)
		}
	}
}

// TestMethodCannotBeGenerated: a method whose generated identifier is
// already declared in the Go package (here by a message, in a file of the
// same package) is a plug-in error naming the method and the identifier,
// and nothing is generated; for each shape's identifiers (grpc_compat
// declares no stream types: only the unary clash applies to it).
func TestMethodCannotBeGenerated(t *testing.T) {
	for _, clash := range []struct{ ident, method string }{
		{"SvcERPC_Get_FullMethodName", "/s.v1.Svc/Get"},
		{"SvcERPC_WatchServer", "/s.v1.Svc/Watch"},
		{"SvcERPC_UploadClient", "/s.v1.Svc/Upload"},
		{"SvcERPC_ChatServer", "/s.v1.Svc/Chat"},
	} {
		params := []string{""}
		if strings.HasSuffix(clash.ident, "_FullMethodName") {
			params = append(params, "grpc_compat=true")
		}
		for _, param := range params {
			svc := file("s.proto", "s.v1", service("Svc", every("s.v1")...))
			other := file("t.proto", "s.v1")
			other.MessageType = []*descriptorpb.DescriptorProto{{Name: proto.String(clash.ident)}}
			resp := generateInProcess(t, param, svc, other)
			msg := resp.GetError()
			for _, s := range []string{"s.proto", "method " + clash.method + " cannot be generated", clash.ident, "message s.v1." + clash.ident} {
				if !strings.Contains(msg, s) {
					t.Errorf("%s clash (%q): error %q does not say %q", clash.ident, param, msg, s)
				}
			}
			if len(resp.File) != 0 {
				t.Errorf("%s clash: %d files generated", clash.ident, len(resp.File))
			}
		}
	}
}

// TestStreamingCollisionRefused: two streaming methods whose names hash to
// the same erpc ID are refused like unary ones (streams share the ID
// space: Server.HandleStream would refuse the second).
func TestStreamingCollisionRefused(t *testing.T) {
	a, b := collidingMethods(t)
	resp := generateInProcess(t, "", file("c.proto", "c.v1",
		service("S",
			method{name: a, in: ".c.v1.Req", out: ".c.v1.Resp", srvStrem: true},
			method{name: b, in: ".c.v1.Req", out: ".c.v1.Resp", clientStream: true, srvStrem: true},
		)))
	msg := resp.GetError()
	for _, s := range []string{"/c.v1.S/" + a, "/c.v1.S/" + b, "same erpc method ID"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q does not say %q", msg, s)
		}
	}
	if len(resp.File) != 0 {
		t.Errorf("%d files generated", len(resp.File))
	}
}
