package erpc_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReadme compiles every Go program in README.md as a user would paste
// it into a new module (only the module's path to this checkout is set),
// then runs them: the quickstart's server and client, and the typed
// example. The quickstart cannot drift from the API again.
func TestReadme(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) < 3 {
		t.Fatalf("README.md has %d Go blocks; the quickstart has a server, a client and a typed example", len(blocks))
	}
	root, _ := os.Getwd()
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	var bins []string
	for i, b := range blocks {
		src := string(b[1])
		if !strings.HasPrefix(src, "package main") {
			t.Fatalf("README Go block %d is not a whole program a user can paste:\n%s", i, src)
		}
		dir := t.TempDir()
		mod := "module readme\n\ngo 1.26\n\nrequire github.com/erpc-go/erpc v0.0.0\n\nreplace github.com/erpc-go/erpc => " + root + "\n"
		for name, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "main.go": []byte(src)} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		bin := filepath.Join(dir, "prog")
		cmd := exec.Command(goTool, "build", "-o", bin, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("README Go block %d does not compile: %v\n%s\n%s", i, err, out, src)
		}
		bins = append(bins, bin)
	}

	// The quickstart: the server, then the client against it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server := exec.CommandContext(ctx, bins[0])
	stderr, _ := server.StderrPipe()
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving at") {
				ready <- true
			}
		}
		ready <- false
	}()
	if !<-ready {
		t.Fatal("the quickstart server did not start")
	}
	if out, err := exec.CommandContext(ctx, bins[1]).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Fatalf("the quickstart client: %v\n%s", err, out)
	}
	if out, err := exec.CommandContext(ctx, bins[2]).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "hello, erpc" {
		t.Fatalf("the typed example: %v\n%s", err, out)
	}
}
