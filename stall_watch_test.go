package erpc_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestStallLoggedWithoutLocalCalls: a server that only receives (no call
// of its own, nothing posted to its loop) and whose plain, inline handler
// (with handoff off) blocks for longer than the stall threshold logs the stall while it
// lasts, not only when something local happens to check it.
func TestStallLoggedWithoutLocalCalls(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	srv := serverWith(t, "Block", func(context.Context, []byte) ([]byte, error) {
		<-release
		return nil, nil
	})
	ep := n.Listen(t, srv, erpc.WithStallLog(50*time.Millisecond), erpc.WithLogger(logger), erpc.WithHandoff(-1))
	s := dialT(t, n, n.Listen(t, nil), ep)
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "Block", nil, nil)
		done <- err
	}()
	logged := func() bool {
		logMu.Lock()
		defer logMu.Unlock()
		return strings.Contains(logs.String(), `the handler of \"Block\" has held the endpoint's event loop`)
	}
	deadline := time.Now().Add(2 * time.Second)
	for !logged() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	held := logged()
	unblock()
	err := <-done
	if !held {
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("a handler held the loop for 2 s and nothing was logged; the log: %q", logs.String())
	}
	if err != nil {
		t.Fatalf("call: %v", err)
	}
}
