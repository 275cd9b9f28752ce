package reflection_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/reflection"
)

// registerTicks adds to the protobuf registry a service of streams, one
// of each shape, as a generated .proto file would.
func registerTicks(t *testing.T) {
	t.Helper()
	if _, err := protoregistry.GlobalFiles.FindFileByPath("test/v1/ticks.proto"); err == nil {
		return
	}
	str := func(s string) *string { return &s }
	yes := true
	rpc := func(name string, client, server bool) *descriptorpb.MethodDescriptorProto {
		m := &descriptorpb.MethodDescriptorProto{Name: str(name),
			InputType: str(".google.protobuf.StringValue"), OutputType: str(".google.protobuf.Int64Value")}
		if client {
			m.ClientStreaming = &yes
		}
		if server {
			m.ServerStreaming = &yes
		}
		return m
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: str("test/v1/ticks.proto"), Package: str("test.v1"), Syntax: str("proto3"),
		Dependency: []string{"google/protobuf/wrappers.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: str("Ticks"), Method: []*descriptorpb.MethodDescriptorProto{
			rpc("Down", false, true), rpc("Up", true, false), rpc("Both", true, true),
		}}},
	}, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	if err := protoregistry.GlobalFiles.RegisterFile(fd); err != nil {
		t.Fatal(err)
	}
}

// TestStreamMethods: reflection says which methods are streams, and a
// stream's message types and shape come from its service's descriptor;
// a stream no descriptor describes is listed as a stream without types.
func TestStreamMethods(t *testing.T) {
	registerTicks(t)
	srv := erpc.NewServer()
	noop := func(s erpc.ServerStream) error { return nil }
	for _, name := range []string{"/test.v1.Ticks/Down", "/test.v1.Ticks/Up", "/test.v1.Ticks/Both", "Loose"} {
		if err := srv.HandleStream(name, noop); err != nil {
			t.Fatal(err)
		}
	}
	if err := reflection.Register(srv); err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://reflection-streams-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rc := reflection.NewClient(s)

	ms, err := rc.ListMethods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	streams := 0
	for _, m := range ms {
		if m.Stream {
			streams++
		}
	}
	if streams != 4 {
		t.Fatalf("ListMethods marked %d streams, want 4: %+v", streams, ms)
	}

	for name, shape := range map[string][2]bool{"/test.v1.Ticks/Down": {false, true}, "/test.v1.Ticks/Up": {true, false}, "/test.v1.Ticks/Both": {true, true}} {
		m, err := rc.Method(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if !m.Stream || m.Descriptor == nil || m.Request == nil || m.Response == nil {
			t.Fatalf("%s: %+v", name, m)
		}
		if got := [2]bool{m.Descriptor.IsStreamingClient(), m.Descriptor.IsStreamingServer()}; got != shape {
			t.Errorf("%s streams (client, server) %v, want %v", name, got, shape)
		}
		if m.Request.FullName() != "google.protobuf.StringValue" || m.Response.FullName() != "google.protobuf.Int64Value" {
			t.Errorf("%s: types %s, %s", name, m.Request.FullName(), m.Response.FullName())
		}
	}
	m, err := rc.Method(ctx, "Loose")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Stream || m.Descriptor != nil || m.Request != nil {
		t.Fatalf("Loose: %+v", m)
	}
}
