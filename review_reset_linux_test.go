package erpc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// TestReviewForgedResetRunsHandlerTwice (promises 1 and 2, end to end over
// UDP): an attacker that has seen one client datagram (the server's
// session number and token travel in clear in every one) forges a reset
// from the server's address while a call's handler runs. The client takes
// the reset as proof that the request never ran (ErrNotExecuted), and the
// endpoint sends it again on a new session (call.go, completeCall): the
// handler runs twice, and the caller sees success.
func TestReviewForgedResetRunsHandlerTwice(t *testing.T) {
	checkLeaks(t)
	sp := newSpoofer(t)
	var runs atomic.Int32
	srv := udpNet{}.Listen(t, serverWith(t, "Pay", func(_ context.Context, req []byte) ([]byte, error) {
		runs.Add(1)
		time.Sleep(200 * time.Millisecond)
		return req, nil
	}))
	cli, rec := recordingEndpoint(t)
	s := dialT(t, udpNet{}, cli, srv)
	if _, err := call(t, s, "Pay", []byte("warm")); err != nil {
		t.Fatal(err)
	}
	runs.Store(0)
	sent, _ := rec.take()
	var num, tok uint32
	for _, b := range sent {
		var h wire.Header
		if _, err := h.Parse(b); err == nil && h.Type != wire.TypeConnect {
			num, tok = h.Session, h.Token
		}
	}
	if tok == 0 {
		t.Fatal("no client datagram seen")
	}
	done := make(chan error, 1)
	go func() { _, err := call(t, s, "Pay", []byte("once")); done <- err }()
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	h := wire.Header{Type: wire.TypeReset, Code: wire.CodeServerClosing, Session: num, Token: tok}
	if err := sp.send(srv.Addr(), cli.Addr(), wire.AppendHeader(nil, &h)); err != nil {
		t.Fatal(err)
	}
	err := <-done
	time.Sleep(300 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Fatalf("one call (it returned %v): its handler ran %d times", err, n)
	}
}
