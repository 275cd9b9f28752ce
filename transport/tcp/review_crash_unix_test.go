//go:build unix

package tcp_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewKillStopListeningClient: promises 2 and 3 with a listening
// client (it dials from its own listening port, so the new connection
// after a restart has the old one's 4-tuple), three kill -9 / restart
// rounds on the same port, then SIGSTOP (a call fails by the failure
// timeout) and SIGCONT (the same session works again).
func TestReviewKillStopListeningClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	srv, target := startServer(t, "127.0.0.1:0")
	cli, err := erpc.Listen("tcp://127.0.0.1:0", erpc.WithFailureTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	s := dialCall(t, cli, target)
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				_, err := s.Call(context.Background(), "Slow", []byte("x"), nil)
				errs <- err
			})
		}
		time.Sleep(100 * time.Millisecond)
		killed := time.Now()
		srv.Process.Kill()
		srv.Wait()
		wg.Wait()
		close(errs)
		for err := range errs {
			if !errors.Is(err, erpc.ErrUnavailable) || errors.Is(err, erpc.ErrNotExecuted) {
				t.Fatalf("round %d: a call in flight at kill -9: %v, want Unavailable (it ran)", round, err)
			}
		}
		t.Logf("round %d: calls failed %v after the kill", round, time.Since(killed))
		var target2 string
		srv, target2 = startServer(t, strings.TrimPrefix(target, "tcp://"))
		if target2 != target {
			t.Fatalf("restarted at %s", target2)
		}
		ok := false
		var last error
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !ok; time.Sleep(20 * time.Millisecond) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, last = s.Call(ctx, "Echo", []byte("again"), nil)
			cancel()
			ok = last == nil
		}
		if !ok {
			t.Fatalf("round %d: the restarted server is unreachable through the session: %v", round, last)
		}
	}
	if err := srv.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, srv.Process.Pid)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := s.Call(ctx, "Echo", []byte("stopped"), nil); !errors.Is(err, erpc.ErrUnavailable) {
		t.Fatalf("call to a stopped server: %v after %v, want Unavailable", err, time.Since(start))
	}
	srv.Process.Signal(syscall.SIGCONT)
	ok := false
	var last error
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !ok; time.Sleep(20 * time.Millisecond) {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		_, last = s.Call(cctx, "Echo", []byte("continued"), nil)
		ccancel()
		ok = last == nil
	}
	if !ok {
		t.Fatalf("after SIGCONT the server is unreachable through the session: %v", last)
	}
}
