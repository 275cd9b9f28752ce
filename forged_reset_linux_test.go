package erpc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// TestForgedResetDoesNotRunHandlerTwice (found by review; promises 1 and
// 2, end to end over UDP): an attacker that has seen one client datagram
// (the server's session number and token travel in clear in every one,
// with that datagram's sequence and request numbers) forges resets from
// the server's address while a call's handler runs: a closing notice, and
// a reset for an unknown session echoing the datagram it saw. The client
// used to take the notice as proof that the request never ran
// (ErrNotExecuted), and the endpoint sent it again on a new session: the
// handler ran twice. Now the client believes neither (the notice lacks
// its token, the reset echoes no packet in flight): the call returns the
// handler's answer and the handler ran once.
func TestForgedResetDoesNotRunHandlerTwice(t *testing.T) {
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
	var seen wire.Header // the last client datagram the attacker saw
	for _, b := range sent {
		var h wire.Header
		if _, err := h.Parse(b); err == nil && h.Type != wire.TypeConnect {
			seen = h
		}
	}
	num, tok := seen.Session, seen.Token
	if tok == 0 {
		t.Fatal("no client datagram seen")
	}
	done := make(chan error, 1)
	go func() { _, err := call(t, s, "Pay", []byte("once")); done <- err }()
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for _, h := range []wire.Header{
		{Type: wire.TypeReset, Code: wire.CodeServerClosing, Session: num, Token: tok},
		{Type: wire.TypeReset, Code: wire.CodeUnknownSession, Session: num, Token: tok, MsgSize: ^uint32(0),
			TxSeq: seen.TxSeq, ReqNum: seen.ReqNum},
	} {
		if err := sp.send(srv.Addr(), cli.Addr(), wire.AppendHeader(nil, &h)); err != nil {
			t.Fatal(err)
		}
	}
	err := <-done
	time.Sleep(300 * time.Millisecond)
	if n := runs.Load(); n != 1 || err != nil {
		t.Fatalf("one call (it returned %v): its handler ran %d times", err, n)
	}
}
