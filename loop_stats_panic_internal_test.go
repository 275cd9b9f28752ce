package erpc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// panicStats panics in the server's CallEnd of method "Boom".
type panicStats struct{}

func (panicStats) CallBegin(ctx context.Context, _ CallInfo) context.Context { return ctx }
func (panicStats) SessionEvent(SessionEvent)                                 {}
func (panicStats) CallEnd(_ context.Context, info CallInfo, _ CallEnd) {
	if info.Server && info.Method == "Boom" {
		panic("stats boom")
	}
}

// TestStatsPanicOnLoopEndsProcess: what StatsHandler's doc says of a
// panic in a method the loop calls: the endpoint does not recover it (the
// guard against runtime.Goexit lets a panic go on), so it ends the
// process, as any unrecovered panic does. Run in a child process, whose
// exit and stderr the test reads.
func TestStatsPanicOnLoopEndsProcess(t *testing.T) {
	if os.Getenv("ERPC_STATS_PANIC_CHILD") == "1" {
		srv := NewServer()
		if err := srv.Handle("Boom", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
			t.Fatal(err)
		}
		p := newStatsPair(t, srv, []Option{WithStatsHandler(panicStats{})}, nil)
		_, _ = p.callWithin(t, "Boom", []byte("x"))
		time.Sleep(2 * time.Second) // the loop's panic ends the process meanwhile
		os.Exit(3)                  // it did not
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStatsPanicOnLoopEndsProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ERPC_STATS_PANIC_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the child has not ended within 60 s")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 3 || !strings.Contains(stderr.String(), "panic: stats boom") {
		t.Fatalf("child: %v, want it ended by the panic; output:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "erpc.(*Endpoint).endServed") {
		t.Errorf("the panic's trace does not go through the loop's CallEnd (endServed):\n%s", stderr.String())
	}
}
