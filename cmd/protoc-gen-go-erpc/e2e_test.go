package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestEndToEnd generates code for every test proto (two packages, one
// importing the other; several services; nested and imported messages;
// proto3 optional; proto2; edition 2023), with protoc-gen-go-grpc's beside
// it, into a module of its own that uses this erpc tree, builds
// testdata/e2e in it and runs it: it serves the services over erpc's
// in-memory network and calls every method (see testdata/e2e/main.go).
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program: not in -short")
	}
	p := buildPlugins(t)
	mod := t.TempDir()
	var tags []string
	if buf, ok := lookTool("BUF", "buf"); ok {
		t.Logf("generating with buf (%s)", buf)
		runBuf(t, buf, p, mod, true)
		tags = append(tags, "editions")
	} else if protoc, err := findProtoc(); err == nil {
		files, editions := protoFiles(t)
		ok, version := protocEditions(t, protoc)
		t.Logf("generating with %s (%s)", version, protoc)
		if ok {
			tags = append(tags, "editions")
		} else {
			var kept []string
			for _, f := range files {
				if !editions[f] {
					kept = append(kept, f)
				}
			}
			files = kept
			t.Logf("%s reads no editions (27 or later does, and buf): the edition 2023 service is left out", version)
		}
		runProtoc(t, protoc, p, mod, true, files)
	} else {
		t.Skipf("no buf, and %v; or install buf (npm install -g @bufbuild/buf) or set BUF", err)
	}

	// The program.
	src, err := filepath.Glob(filepath.Join("testdata", "e2e", "*.go"))
	if err != nil || len(src) == 0 {
		t.Fatalf("testdata/e2e: %v", err)
	}
	prog := filepath.Join(mod, "cmd", "e2e")
	if err := os.MkdirAll(prog, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range src {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(prog, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Its module: this erpc tree, and the versions this module requires.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	versions, err := output(ctx, ".", nil, goTool(), "list", "-m", "-f", "{{.Path}} {{.Version}}",
		"google.golang.org/grpc", "google.golang.org/protobuf")
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module " + goModule + "\n\ngo 1.26.0\n\nrequire (\n\tgithub.com/erpc-go/erpc v0.0.0\n\tgithub.com/erpc-go/erpc/contrib/grpc v0.0.0\n"
	for _, line := range strings.Split(strings.TrimSpace(versions), "\n") {
		gomod += "\t" + line + "\n"
	}
	gomod += ")\n\nreplace github.com/erpc-go/erpc => " + root + "\n"
	gomod += "\nreplace github.com/erpc-go/erpc/contrib/grpc => " + filepath.Join(root, "contrib", "grpc") + "\n"
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), goSum(t, "go.sum", filepath.Join(root, "go.sum"), filepath.Join(root, "contrib", "grpc", "go.sum")), 0o644); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(mod, "e2e.bin")
	env := []string{"GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false"}
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if err := runCmd(ctx, mod, env, goTool(), append(args, "./cmd/e2e")...); err != nil {
		t.Fatal(err)
	}
	// The generated code (ours and protoc-gen-go's and -grpc's) is vet-clean.
	vet := []string{"vet"}
	if len(tags) > 0 {
		vet = append(vet, "-tags", strings.Join(tags, ","))
	}
	if err := runCmd(ctx, mod, env, goTool(), append(vet, "./...")...); err != nil {
		t.Error(err)
	}
	out, err := output(ctx, mod, nil, bin)
	t.Logf("e2e output:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\nPASS\n") {
		t.Fatal("e2e did not say PASS")
	}
	for _, want := range []string{"ok grpc:", "ok collision:", "ok catalog.Deadline: a deadline that passes",
		"ok streams: every shape", "ok compat: one gRPC implementation"} {
		if !strings.Contains(out, want) {
			t.Errorf("e2e output lacks %q", want)
		}
	}
	if len(tags) > 0 && !strings.Contains(out, "ok inventory:") {
		t.Error("e2e did not check the edition 2023 service")
	}
}

// goSum merges go.sum files.
func goSum(t *testing.T, files ...string) []byte {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				seen[line] = true
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	lines := make([]string, 0, len(seen))
	for l := range seen {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, "\n") + "\n")
}
