//go:build linux

package shm_test

import (
	"bufio"
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/shm"
)

const (
	helperEnv     = "ERPC_SHM_HELPER_SOCKET"
	helperModeEnv = "ERPC_SHM_HELPER_MODE"
)

// TestHelperServer is the server process of TestServerCrash and of the
// cross-process benchmarks: the test binary re-executed with helperEnv set.
// It serves "Echo" and "Slow" on the socket until killed (or a minute
// passes); in raw mode it echoes datagrams on a bare transport instead.
func TestHelperServer(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("runs only as the server process of TestServerCrash")
	}
	if os.Getenv(helperModeEnv) == "raw" {
		rawEcho(t, path)
		return
	}
	h := erpc.NewServer()
	h.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	h.HandleRaw("Sink", func(r erpc.Request) { // 32 bytes back, whatever came (BenchmarkLargeCallProcess)
		out := r.ResponseBuffer(32)
		copy(out, r.Data())
		r.Respond(out)
	})
	h.Handle("Slow", func(ctx context.Context, req []byte) ([]byte, error) {
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute):
		}
		return req, nil
	}, erpc.Background())
	ep, err := h.Listen("shm://" + path)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("READY\n")
	time.Sleep(time.Minute)
	ep.Close()
}

// rawEcho sends every datagram back, polling without sleeping.
func rawEcho(t *testing.T, path string) {
	tr, err := shm.Listen(path, shm.Options{Spin: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	os.Stdout.WriteString("READY\n")
	msg := []transport.Message{{}}
	end := time.Now().Add(time.Minute)
	for time.Now().Before(end) {
		tr.Receive(func(from netip.AddrPort, data []byte) {
			msg[0].To, msg[0].Head = from, data
			tr.Send(msg)
		})
		tr.GonePeers(nil)
	}
}

// startServer runs TestHelperServer in a new process and waits until it
// listens on path.
func startServer(t testing.TB, path string) *exec.Cmd {
	t.Helper()
	return startHelper(t, path, "")
}

func startHelper(t testing.TB, path, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+path, helperModeEnv+"="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "READY" {
				ready <- true
				break
			}
		}
		ready <- false
		for sc.Scan() { // drain until the process exits
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("server process exited before it was ready")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server process not ready after 20 s")
	}
	return cmd
}

func devShm(t *testing.T) map[string]bool {
	ents, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	m := make(map[string]bool)
	for _, e := range ents {
		m[e.Name()] = true
	}
	return m
}

// shmMappings counts this process's mappings of erpc memfds named name
// ("erpc-shm": connection rings).
func shmMappings(t *testing.T, name string) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "/memfd:"+name+" ")
}

func TestServerCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	before := devShm(t)
	rings := shmMappings(t, "erpc-shm")
	path := filepath.Join(sockDir(t), "srv.sock")
	srv := startServer(t, path)

	const failureTimeout = 2 * time.Second
	cli, err := erpc.Listen("shm://", erpc.WithFailureTimeout(failureTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cli.Dial(ctx, "shm://"+path)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := s.Call(ctx, "Echo", []byte("hello"), nil); err != nil || string(resp) != "hello" {
		t.Fatalf("echo: %q, %v", resp, err)
	}
	if n := shmMappings(t, "erpc-shm"); n != rings+2 { // our memory and the server's
		t.Fatalf("%d ring mappings with one connection open, want %d", n, rings+2)
	}

	// Calls in flight when the server dies, being handled: small ones and
	// 4 MiB ones.
	const calls = 6
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			req := []byte("x")
			if i%2 == 1 {
				req = make([]byte, 4<<20)
			}
			_, err := s.Call(context.Background(), "Slow", req, nil)
			errs <- err
		})
	}
	time.Sleep(200 * time.Millisecond)
	killed := time.Now()
	if err := srv.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	elapsed := time.Since(killed)
	close(errs)
	for err := range errs {
		if !errors.Is(err, erpc.ErrUnavailable) {
			t.Fatalf("call pending when the server was killed: %v, want Unavailable", err)
		}
	}
	t.Logf("%d pending calls failed within %v of SIGKILL (failure timeout %v)", calls, elapsed, failureTimeout)
	if elapsed > failureTimeout/4 {
		t.Fatalf("calls failed %v after the kill: the transport did not see the peer die", elapsed)
	}
	srv.Wait()

	// The connection's memory is released and nothing is left in /dev/shm.
	deadline := time.Now().Add(2 * time.Second)
	for shmMappings(t, "erpc-shm") != rings && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := shmMappings(t, "erpc-shm"); n != rings {
		t.Fatalf("%d ring mappings after the peer died, want %d", n, rings)
	}
	for name := range devShm(t) {
		if !before[name] {
			t.Errorf("new file in /dev/shm: %s", name)
		}
	}

	// While no server listens, calls fail at once.
	start := time.Now()
	if _, err := s.Call(ctx, "Echo", []byte("x"), nil); !errors.Is(err, erpc.ErrUnavailable) {
		t.Fatalf("call with the server down: %v, want Unavailable", err)
	}
	if d := time.Since(start); d > failureTimeout/4 {
		t.Fatalf("call with the server down failed after %v", d)
	}
	cli2, err := erpc.Listen("shm://")
	if err != nil {
		t.Fatal(err)
	}
	defer cli2.Close()
	if _, err := cli2.Dial(ctx, "shm://"+path); !errors.Is(err, erpc.ErrUnavailable) {
		t.Fatalf("dial with the server down: %v, want Unavailable", err)
	}

	// A server restarted on the same socket keeps its address: the old
	// session reconnects by itself (the transport redials the socket when
	// the session sends to the address), and new sessions are accepted.
	startServer(t, path)
	var resp []byte
	tries := 0
	for {
		tries++
		if resp, err = s.Call(ctx, "Echo", []byte("old session"), nil); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || string(resp) != "old session" {
		t.Fatalf("echo on the session from before the crash: %q, %v", resp, err)
	}
	t.Logf("the old session reconnected at call %d", tries)
	s2, err := cli.Dial(ctx, "shm://"+path)
	if err != nil {
		t.Fatalf("dial the restarted server: %v", err)
	}
	if resp, err := s2.Call(ctx, "Echo", []byte("again"), nil); err != nil || string(resp) != "again" {
		t.Fatalf("echo on a new session: %q, %v", resp, err)
	}
}
