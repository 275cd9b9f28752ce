package erpc_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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
	var protoProg string // the program of "From .proto to a running service"
	// The quickstart serves on a fixed port, which something else (the
	// README's demo, run by hand) may hold: its programs run on a free one.
	quickAddr, moved := "127.0.0.1:"+freeUDPPort(t), 0
	for i, b := range blocks {
		src := string(b[1])
		moved += strings.Count(src, readmeQuickstartAddr)
		src = strings.ReplaceAll(src, readmeQuickstartAddr, quickAddr)
		if !strings.HasPrefix(src, "package main") {
			t.Fatalf("README Go block %d is not a whole program a user can paste:\n%s", i, src)
		}
		if strings.Contains(src, `"example.com/hello/greeterpb"`) {
			protoProg = src
			continue
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
	if moved < 2 {
		t.Fatalf("the quickstart's server and client no longer use %s: update the address this test moves", readmeQuickstartAddr)
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
	if protoProg == "" {
		t.Fatal(`README.md has no "From .proto to a running service" program`)
	}
	t.Run("proto", func(t *testing.T) { testReadmeProto(t, string(readme), protoProg, root) })
}

// testReadmeProto follows "From .proto to a running service": the .proto
// block into a new module, protoc with the plug-ins the README installs
// (built from this checkout), the program built and started, and a client
// calling it through the generated stub.
func testReadmeProto(t *testing.T, readme, prog, root string) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("protoc not installed (.ci/run installs it)")
	}
	m := regexp.MustCompile("(?s)```proto\n(.*?)```").FindStringSubmatch(readme)
	// The README's address stays in its text; the programs run on a free
	// port, so the demo may run meanwhile.
	if !strings.Contains(prog, readmeProtoAddr) {
		t.Fatalf("the README's proto program no longer serves on %s: update the address this test moves", readmeProtoAddr)
	}
	addr := "127.0.0.1:" + freeUDPPort(t)
	prog = strings.ReplaceAll(prog, readmeProtoAddr, addr)
	if m == nil {
		t.Fatal("README.md has no proto block")
	}
	dir, bin := t.TempDir(), t.TempDir()
	run := func(dir string, env []string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run(root, nil, "go", "build", "-o", bin, "google.golang.org/protobuf/cmd/protoc-gen-go")
	run(filepath.Join(root, "cmd", "protoc-gen-go-erpc"), nil, "go", "build", "-o", bin, ".")
	client := `package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"example.com/hello/greeterpb"
	"github.com/erpc-go/erpc"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, "ADDR")
	if err != nil {
		log.Fatal(err)
	}
	r, err := greeterpb.NewGreeterERPCClient(s).SayHello(ctx, &greeterpb.HelloRequest{Name: "Ada"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.GetMessage())
}
`
	client = strings.ReplaceAll(client, "ADDR", addr)
	sum, _ := os.ReadFile(filepath.Join(root, "go.sum"))
	gomod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	pb := regexp.MustCompile(`google.golang.org/protobuf (v\S+)`).FindStringSubmatch(string(gomod))
	if pb == nil {
		t.Fatal("go.mod does not require google.golang.org/protobuf")
	}
	mod := "module example.com/hello\n\ngo 1.26\n\nrequire (\n\tgithub.com/erpc-go/erpc v0.0.0\n\tgoogle.golang.org/protobuf " + pb[1] +
		"\n)\n\nreplace github.com/erpc-go/erpc => " + root + "\n"
	for name, data := range map[string]string{"go.mod": mod, "go.sum": string(sum), "greeter.proto": m[1],
		"main.go": prog, "client/main.go": client} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")
	run(dir, []string{path}, protoc, "--go_out=.", "--go_opt=module=example.com/hello",
		"--go-erpc_out=.", "--go-erpc_opt=module=example.com/hello", "greeter.proto")
	goEnv := []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off"}
	run(dir, goEnv, "go", "build", "-o", filepath.Join(bin, "server"), ".")
	run(dir, goEnv, "go", "build", "-o", filepath.Join(bin, "client"), "./client")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server := exec.CommandContext(ctx, filepath.Join(bin, "server"))
	stderr, _ := server.StderrPipe()
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() || !strings.Contains(sc.Text(), "serving at") {
		t.Fatalf("the server did not start: %s", sc.Text())
	}
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "client")).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "hello, Ada" {
		t.Fatalf("the generated client: %v\n%s", err, out)
	}
}

// The fixed addresses of the README's programs, which the test moves to
// free ports.
const (
	readmeQuickstartAddr = "127.0.0.1:31850"
	readmeProtoAddr      = "127.0.0.1:50051"
)

// freeUDPPort is a UDP port on loopback that was free a moment ago.
func freeUDPPort(t *testing.T) string {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return strconv.Itoa(c.LocalAddr().(*net.UDPAddr).Port)
}
