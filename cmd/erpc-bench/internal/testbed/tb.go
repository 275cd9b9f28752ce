//go:build linux

package testbed

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/erpc-go/erpc/internal/testnet"
)

// The testbed scenarios (incast, multipath, loss -testbed) build their
// networks with internal/testnet, whose builders take a testnet.TB: a test
// has *testing.T; erpc-bench has TB. Its Fatal and Skip end the
// scenario (a panic that Run recovers into an error) and its
// cleanups run when the scenario returns, fails, or is interrupted
// (SIGINT, SIGTERM), so that no namespace outlives the run.

// ErrNoTestbed is the error of a scenario that cannot build its network
// here (not root, a tool missing): erpc-bench exits with its message; tests
// skip.
var ErrNoTestbed = errors.New("needs the namespace testbed")

type tbAbort struct{ msg string }
type tbSkip struct{ msg string }

type TB struct {
	log io.Writer

	mu       sync.Mutex
	cleanups []func()
	failed   []string
}

var _ testnet.TB = (*TB)(nil)

func (t *TB) Helper() {}

func (t *TB) Logf(format string, args ...any) {
	fmt.Fprintf(t.log, "erpc-bench: "+format+"\n", args...)
}

func (t *TB) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.mu.Lock()
	t.failed = append(t.failed, msg)
	t.mu.Unlock()
	t.Logf("%s", msg)
}

func (t *TB) Fatal(args ...any)                 { panic(tbAbort{fmt.Sprint(args...)}) }
func (t *TB) Fatalf(format string, args ...any) { panic(tbAbort{fmt.Sprintf(format, args...)}) }
func (t *TB) Skip(args ...any)                  { panic(tbSkip{fmt.Sprint(args...)}) }
func (t *TB) Skipf(format string, args ...any)  { panic(tbSkip{fmt.Sprintf(format, args...)}) }

func (t *TB) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}

// cleanup runs the cleanups registered so far, last first.
func (t *TB) cleanup() {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		f()
	}
}

// Run runs fn with a TB, then its cleanups. A Skip becomes an
// error wrapping ErrNoTestbed, a Fatal an error; an interrupt runs the
// cleanups and exits.
func Run(log io.Writer, fn func(t *TB) error) (err error) {
	t := &TB{log: log}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			fmt.Fprintf(log, "erpc-bench: %v: removing the testbed\n", s)
			t.cleanup()
			os.Exit(130)
		case <-done:
		}
	}()
	defer func() {
		signal.Stop(sig)
		close(done)
		t.cleanup()
	}()
	defer func() {
		switch r := recover().(type) {
		case nil:
		case tbSkip:
			err = fmt.Errorf("%w: %s (run as root with iproute2 and nftables installed)", ErrNoTestbed, r.msg)
		case tbAbort:
			err = errors.New(r.msg)
		default:
			panic(r)
		}
		if err == nil && len(t.failed) > 0 {
			err = errors.New(t.failed[0])
		}
	}()
	return fn(t)
}
