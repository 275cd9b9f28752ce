//go:build linux

package shm

// The test process's side of the hostile-peer tests (see
// hostile_linux_test.go): starting peer processes, a listener serving echo,
// a well-behaved peer to check it still serves, and waiting on its counts.

import (
	"bufio"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// hostile is a running hostile peer process.
type hostile struct {
	cmd   *exec.Cmd
	lines chan string
}

func startHostile(t *testing.T, path, mode string) *hostile {
	t.Helper()
	return startHelperProcess(t, "TestHostilePeerHelper", hostileEnv+"="+path, hostileModeEnv+"="+mode)
}

// startHelperProcess runs the test binary as another process, running the
// test named run only, with env added to its environment.
func startHelperProcess(t *testing.T, run string, env ...string) *hostile {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &hostile{cmd: cmd, lines: make(chan string, 1000)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(h.kill)
	return h
}

func (h *hostile) kill() {
	h.cmd.Process.Kill()
	h.cmd.Wait()
}

// expect returns the peer's next line, which must start with prefix.
func (h *hostile) expect(t *testing.T, prefix string) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			t.Fatalf("the hostile peer exited before saying %q", prefix)
		}
		if !strings.HasPrefix(l, prefix) {
			t.Fatalf("the hostile peer said %q, want %q...", l, prefix)
		}
		t.Logf("hostile peer: %s", l)
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("the hostile peer did not say %q within 30 s", prefix)
	}
	return ""
}

// hostileListener opens a listening transport on a fresh socket path.
func hostileListener(t *testing.T, opts Options) (*Transport, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "erpcshm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "l.sock")
	tr, err := Listen(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, path
}

// serveEcho runs the listener's loop until the test ends: every datagram
// goes back to its sender.
func serveEcho(t *testing.T, tr *Transport) {
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		msg := []transport.Message{{}}
		for !stop.Load() {
			n, _ := tr.Receive(func(from netip.AddrPort, data []byte) {
				msg[0].To, msg[0].Head = from, data
				tr.Send(msg)
			})
			if n == 0 {
				tr.Wait(time.Now().Add(50 * time.Millisecond))
			}
			tr.GonePeers(nil)
		}
	}()
	t.Cleanup(func() {
		stop.Store(true)
		tr.Wake()
		<-done
	})
}

// echo sends a datagram from a well-behaved peer (a transport of this
// process) to the listener at path and waits for it to come back.
func echo(path string) error {
	cli, err := Listen("", Options{})
	if err != nil {
		return err
	}
	defer cli.Close()
	to, err := cli.Resolve(path)
	if err != nil {
		return err
	}
	if err := cli.Send([]transport.Message{{To: to, Head: []byte("hello")}}); err != nil {
		return err
	}
	got := false
	for end := time.Now().Add(5 * time.Second); !got && time.Now().Before(end); {
		if n, _ := cli.Receive(func(netip.AddrPort, []byte) { got = true }); n == 0 {
			cli.Wait(time.Now().Add(10 * time.Millisecond))
		}
	}
	if !got {
		return errors.New("no echo within 5 s")
	}
	return nil
}

func checkEcho(t *testing.T, path string) {
	t.Helper()
	if err := echo(path); err != nil {
		t.Fatalf("well-behaved peer: %v", err)
	}
}

// waitConns waits until tr counts n connections and handshakes against
// MaxPeers (the closed connections of well-behaved peers are released by
// the loop a moment after they close).
func waitConns(t *testing.T, tr *Transport, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr.mu.Lock()
		k := len(tr.conns) + tr.accepting
		tr.mu.Unlock()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections and handshakes, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// shortHandshakes makes handshakes time out after d for this test.
func shortHandshakes(t *testing.T, d time.Duration) {
	old := handshakeTimeout
	handshakeTimeout = d
	t.Cleanup(func() { handshakeTimeout = old })
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
