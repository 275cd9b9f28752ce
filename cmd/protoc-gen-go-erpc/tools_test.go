package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests that run the plug-in through a compiler need protoc (set
// PROTOC to choose one) or buf (BUF); without them they skip, saying so.
// protoc-gen-go and protoc-gen-go-grpc are built from this module's tool
// dependencies (see go.mod), so their versions are pinned.

var update = flag.Bool("update", false, "rewrite testdata/golden with the generated files")

// goModule is the Go module path the test protos' go_package options name.
const goModule = "example.com/erpctest"

var toolDir string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "protoc-gen-go-erpc-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	toolDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// plugins are the plug-in binaries, built once per test run.
type plugins struct {
	erpc, golang, grpc string
}

var (
	pluginsOnce sync.Once
	pluginsBin  plugins
	pluginsErr  error
)

func buildPlugins(t *testing.T) plugins {
	t.Helper()
	pluginsOnce.Do(func() {
		build := func(name, pkg string) string {
			out := filepath.Join(toolDir, name)
			if pluginsErr == nil {
				pluginsErr = runCmd(context.Background(), ".", nil, goTool(), "build", "-o", out, pkg)
			}
			return out
		}
		pluginsBin = plugins{
			erpc:   build("protoc-gen-go-erpc", "."),
			golang: build("protoc-gen-go", "google.golang.org/protobuf/cmd/protoc-gen-go"),
			grpc:   build("protoc-gen-go-grpc", "google.golang.org/grpc/cmd/protoc-gen-go-grpc"),
		}
	})
	if pluginsErr != nil {
		t.Fatalf("build the plug-ins: %v", pluginsErr)
	}
	return pluginsBin
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// runCmd runs a command in dir, with env added to the environment, and
// returns an error with its output if it fails.
func runCmd(ctx context.Context, dir string, env []string, name string, args ...string) error {
	_, err := output(ctx, dir, env, name, args...)
	return err
}

func output(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// lookTool finds a tool by the environment variable that names it, or
// else on the PATH.
func lookTool(envVar, name string) (string, bool) {
	if p := os.Getenv(envVar); p != "" {
		name = p
	}
	p, err := exec.LookPath(name)
	return p, err == nil
}

func needProtoc(t *testing.T) string {
	t.Helper()
	p, err := findProtoc()
	if err != nil {
		t.Skip(err)
	}
	return p
}

var (
	protocOnce sync.Once
	protocPath string
	protocErr  error
)

// findProtoc finds a protoc that has the well-known types' .proto files
// (google/protobuf/empty.proto...), which the test protos import.
func findProtoc() (string, error) {
	protocOnce.Do(func() {
		p, ok := lookTool("PROTOC", "protoc")
		if !ok {
			protocErr = errors.New("protoc not found: install it (Debian: apt-get install protobuf-compiler libprotobuf-dev) or set PROTOC")
			return
		}
		dir, err := os.MkdirTemp("", "protoc-check-")
		if err != nil {
			protocErr = err
			return
		}
		defer os.RemoveAll(dir)
		src := "syntax = \"proto3\";\nimport \"google/protobuf/empty.proto\";\n"
		if err := os.WriteFile(filepath.Join(dir, "wkt.proto"), []byte(src), 0o644); err != nil {
			protocErr = err
			return
		}
		if err := runCmd(context.Background(), dir, nil, p, "--descriptor_set_out="+os.DevNull, "wkt.proto"); err != nil {
			protocErr = fmt.Errorf("%s lacks the well-known types (Debian: apt-get install libprotobuf-dev): %v", p, err)
			return
		}
		protocPath = p
	})
	return protocPath, protocErr
}

func needBuf(t *testing.T) string {
	t.Helper()
	p, ok := lookTool("BUF", "buf")
	if !ok {
		t.Skip("buf not found: install it (npm install -g @bufbuild/buf, or a release from github.com/bufbuild/buf) or set BUF")
	}
	return p
}

var protocVersionRE = regexp.MustCompile(`libprotoc (\d+)\.(\d+)`)

// protocEditions reports whether protoc reads edition 2023 files: from
// release 27 on (3.x releases count as x).
func protocEditions(t *testing.T, protoc string) (bool, string) {
	t.Helper()
	out, err := output(context.Background(), ".", nil, protoc, "--version")
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(out)
	m := protocVersionRE.FindStringSubmatch(version)
	if m == nil {
		t.Fatalf("protoc --version: %q", version)
	}
	major, _ := strconv.Atoi(m[1])
	if major == 3 {
		major, _ = strconv.Atoi(m[2])
	}
	return major >= 27, version
}

var editionRE = regexp.MustCompile(`(?m)^edition\s*=`)

// protoFiles lists testdata/proto's files, relative to it, and which of
// them are in editions syntax.
func protoFiles(t *testing.T) (all []string, editions map[string]bool) {
	t.Helper()
	editions = map[string]bool{}
	root := filepath.Join("testdata", "proto")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".proto") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		all = append(all, rel)
		b, err := os.ReadFile(path)
		if editionRE.Match(b) {
			editions[rel] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all, editions
}

// compatDir holds the test protos generated with grpc_compat=true.
const compatDir = "erpctest/compat/"

// runProtoc compiles files (relative to testdata/proto) into out with
// protoc-gen-go, protoc-gen-go-erpc and, if grpc, protoc-gen-go-grpc: those
// under compatDir with the erpc plug-in's grpc_compat=true, in a second run.
func runProtoc(t *testing.T, protoc string, p plugins, out string, grpc bool, files []string) {
	t.Helper()
	var native, compat []string
	for _, f := range files {
		if strings.HasPrefix(f, compatDir) {
			compat = append(compat, f)
		} else {
			native = append(native, f)
		}
	}
	for i, files := range [][]string{native, compat} {
		if len(files) == 0 {
			continue
		}
		erpcOpt := "--go-erpc_opt=module=" + goModule
		if i == 1 {
			erpcOpt += ",grpc_compat=true"
		}
		args := []string{"-I", filepath.Join("testdata", "proto"),
			"--plugin=protoc-gen-go=" + p.golang, "--go_out=" + out, "--go_opt=module=" + goModule,
			"--plugin=protoc-gen-go-erpc=" + p.erpc, "--go-erpc_out=" + out, erpcOpt,
		}
		if grpc {
			args = append(args, "--plugin=protoc-gen-go-grpc="+p.grpc, "--go-grpc_out="+out, "--go-grpc_opt=module="+goModule)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := runCmd(ctx, ".", nil, protoc, append(args, files...)...)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// runBuf does what runProtoc does with buf generate, for every file of
// testdata/proto.
func runBuf(t *testing.T, buf string, p plugins, out string, grpc bool) {
	t.Helper()
	input, err := filepath.Abs(filepath.Join("testdata", "proto"))
	if err != nil {
		t.Fatal(err)
	}
	compat := filepath.Join(input, filepath.FromSlash(strings.TrimSuffix(compatDir, "/")))
	runBufOnce(t, buf, p, out, grpc, input, "", "--exclude-path", compat)
	runBufOnce(t, buf, p, out, grpc, input, ",grpc_compat=true", "--path", compat)
}

func runBufOnce(t *testing.T, buf string, p plugins, out string, grpc bool, input, erpcOpt string, args ...string) {
	t.Helper()
	dir := t.TempDir()
	var conf strings.Builder
	conf.WriteString("version: v2\nplugins:\n")
	plugin := func(bin, opt string) {
		fmt.Fprintf(&conf, "  - local: %s\n    out: %s\n    opt: module=%s%s\n", strconv.Quote(bin), strconv.Quote(out), goModule, opt)
	}
	plugin(p.golang, "")
	plugin(p.erpc, erpcOpt)
	if grpc {
		plugin(p.grpc, "")
	}
	template := filepath.Join(dir, "buf.gen.yaml")
	if err := os.WriteFile(template, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := []string{"BUF_CACHE_DIR=" + filepath.Join(dir, "cache")}
	if err := runCmd(ctx, dir, env, buf, append([]string{"generate", input, "--template", template}, args...)...); err != nil {
		t.Fatal(err)
	}
}
