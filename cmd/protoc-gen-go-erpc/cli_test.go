package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionFlag(t *testing.T) {
	p := buildPlugins(t)
	out, err := output(context.Background(), ".", nil, p.erpc, "--version")
	if err != nil || strings.TrimSpace(out) != "protoc-gen-go-erpc "+version {
		t.Errorf("--version: %q, %v", out, err)
	}
	out, err = output(context.Background(), ".", nil, p.erpc, "greet.proto")
	if err == nil || !strings.Contains(out, "protoc plug-in") {
		t.Errorf("run by hand: %q, %v", out, err)
	}
}

// collisionProto writes a .proto whose service erpc cannot serve, and
// returns its directory.
func collisionProto(t *testing.T) string {
	t.Helper()
	a, b := collidingMethods(t)
	dir := t.TempDir()
	src := fmt.Sprintf(`syntax = "proto3";
package c.v1;
option go_package = "example.com/c/v1;cv1";
message M {}
service S {
  rpc %s(M) returns (M);
  rpc %s(M) returns (M);
}
`, a, b)
	if err := os.WriteFile(filepath.Join(dir, "c.proto"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The compilers report the plug-in's refusal.
func TestCompilersReportCollision(t *testing.T) {
	t.Run("protoc", func(t *testing.T) {
		protoc := needProtoc(t)
		p := buildPlugins(t)
		dir := collisionProto(t)
		out, err := output(context.Background(), dir, nil, protoc, "--plugin=protoc-gen-go-erpc="+p.erpc,
			"--go-erpc_out="+t.TempDir(), "c.proto")
		if err == nil || !strings.Contains(out, "same erpc method ID") {
			t.Errorf("protoc: %v\n%s", err, out)
		}
	})
	t.Run("buf", func(t *testing.T) {
		buf := needBuf(t)
		p := buildPlugins(t)
		dir := collisionProto(t)
		template := fmt.Sprintf(`{"version":"v2","plugins":[{"local":%q,"out":%q}]}`, p.erpc, t.TempDir())
		out, err := output(context.Background(), dir, []string{"BUF_CACHE_DIR=" + t.TempDir()}, buf, "generate", "--template", template)
		if err == nil || !strings.Contains(out, "same erpc method ID") {
			t.Errorf("buf: %v\n%s", err, out)
		}
	})
}

// TestProtocReportsMethodNotGenerated: protoc fails, naming the method,
// when a streaming method's stream type would clash with a message.
func TestProtocReportsMethodNotGenerated(t *testing.T) {
	protoc := needProtoc(t)
	p := buildPlugins(t)
	dir := t.TempDir()
	src := `syntax = "proto3";
package c.v1;
option go_package = "example.com/c/v1;cv1";
message M {}
message SERPC_WatchServer {}
service S {
  rpc Watch(M) returns (stream M);
}
`
	if err := os.WriteFile(filepath.Join(dir, "c.proto"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := output(context.Background(), dir, nil, protoc, "--plugin=protoc-gen-go-erpc="+p.erpc,
		"--go-erpc_out="+t.TempDir(), "c.proto")
	if err == nil || !strings.Contains(out, "method /c.v1.S/Watch cannot be generated: its identifier SERPC_WatchServer") {
		t.Errorf("protoc: %v\n%s", err, out)
	}
}
