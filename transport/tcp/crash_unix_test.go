//go:build unix

package tcp_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

const helperEnv = "ERPC_TCP_HELPER_ADDR"

// TestHelperServer is the server process of the crash tests: the test
// binary re-executed with helperEnv set to the address to listen on. It
// serves "Echo" and "Slow" until killed (or a minute passes).
func TestHelperServer(t *testing.T) {
	addr := os.Getenv(helperEnv)
	if addr == "" {
		t.Skip("runs only as the server process of the crash tests")
	}
	h := erpc.NewServer()
	h.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	h.Handle("Slow", func(ctx context.Context, req []byte) ([]byte, error) {
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute):
		}
		return req, nil
	}, erpc.Background())
	ep, err := h.Listen("tcp://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("READY " + ep.Target() + "\n")
	time.Sleep(time.Minute)
	ep.Close()
}

// startServer runs TestHelperServer in a new process listening on addr
// and returns it with its target once it listens.
func startServer(t *testing.T, addr string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if target, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- target
				break
			}
		}
		ready <- ""
		for sc.Scan() { // drain until the process exits
		}
	}()
	select {
	case target := <-ready:
		if target == "" {
			t.Fatal("server process exited before it was ready")
		}
		return cmd, target
	case <-time.After(20 * time.Second):
		t.Fatal("server process not ready after 20 s")
	}
	return nil, ""
}

func dialCall(t *testing.T, cli *erpc.Endpoint, target string) *erpc.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cli.Dial(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := s.Call(ctx, "Echo", []byte("hello"), nil); err != nil || string(resp) != "hello" {
		t.Fatalf("echo: %q, %v", resp, err)
	}
	return s
}

// TestPeerKilled: kill -9 of the server process fails the calls in
// flight with Unavailable at once (the connection's end, GonePeers), far
// within the 20 s failure timeout; a server restarted on the same address
// is reachable again from the same client endpoint.
func TestPeerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	srv, target := startServer(t, "127.0.0.1:0")
	const failureTimeout = 20 * time.Second
	cli, err := erpc.Listen("tcp://", erpc.WithFailureTimeout(failureTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	s := dialCall(t, cli, target)
	const calls = 6
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			req := []byte("x")
			if i%2 == 1 {
				req = make([]byte, 4<<20) // some in the middle of a transfer
			}
			_, err := s.Call(context.Background(), "Slow", req, nil)
			errs <- err
		})
	}
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	if err := srv.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	wg.Wait()
	elapsed := time.Since(killed)
	close(errs)
	for err := range errs {
		if !errors.Is(err, erpc.ErrUnavailable) {
			t.Fatalf("call pending when the server was killed: %v, want Unavailable", err)
		}
	}
	if elapsed > failureTimeout/2 {
		t.Fatalf("calls failed %v after the kill: the failure timeout, not the connection's end", elapsed)
	}
	t.Logf("calls failed %v after kill -9", elapsed)

	_, target2 := startServer(t, strings.TrimPrefix(target, "tcp://"))
	if target2 != target {
		t.Fatalf("restarted server at %s, want %s", target2, target)
	}
	dialCall(t, cli, target).Close()
}

// TestPeerStopped: a server that stops (SIGSTOP: it reads nothing more
// and sends no FIN, its connection stays open, as a vanished host's does)
// ends the session by the failure timeout: the call fails with
// Unavailable instead of waiting for ever.
func TestPeerStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	srv, target := startServer(t, "127.0.0.1:0")
	const failureTimeout = 500 * time.Millisecond
	cli, err := erpc.Listen("tcp://", erpc.WithFailureTimeout(failureTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	s := dialCall(t, cli, target)
	if err := srv.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, srv.Process.Pid)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = s.Call(ctx, "Echo", make([]byte, 1<<20), nil)
	if !errors.Is(err, erpc.ErrUnavailable) {
		t.Fatalf("call to a stopped server: %v, want Unavailable", err)
	}
	t.Logf("call failed %v after it started (failure timeout %v)", time.Since(start), failureTimeout)
}

// waitStopped waits until the kernel reports process pid stopped (the
// fault the test injects, asserted), where /proc says; elsewhere it
// trusts the signal.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for range 200 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "T" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the server process never stopped")
}
