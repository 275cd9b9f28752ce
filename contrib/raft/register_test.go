package raft

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/contrib/raft/internal/leaktest"
	"github.com/hashicorp/raft"
)

// Register, then Listen, then Start: raft shares the endpoint with another
// method; a peer's RPC that arrives before Start is answered Unavailable
// (which raft retries), never Unimplemented; the transport's own RPCs fail
// with ErrNotStarted until then; and Close leaves the caller's endpoint
// serving its other methods.
func TestRegisterThenStart(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := erpc.NewServer()
	tr, err := Register(srv, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Handle("echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(memAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if tr.Endpoint() != nil || tr.LocalAddr() != "" {
		t.Fatalf("before Start: endpoint %v, local address %q", tr.Endpoint(), tr.LocalAddr())
	}

	peer := newTransport(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := peer.Endpoint().Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	vote := appendRequestVoteRequest(nil, &raft.RequestVoteRequest{RPCHeader: hdr("peer"), Term: 4})
	if _, err := s.Call(ctx, methodRequestVote, vote, nil); erpc.CodeOf(err) != erpc.Unavailable || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("an RPC before Start: %v, want Unavailable (starting)", err)
	}
	err = tr.RequestVote("p", peer.LocalAddr(), &raft.RequestVoteRequest{Term: 1}, new(raft.RequestVoteResponse))
	if !errors.Is(err, ErrNotStarted) {
		t.Fatalf("RequestVote before Start: %v, want ErrNotStarted", err)
	}
	if _, err := tr.AppendEntriesPipeline("p", peer.LocalAddr()); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("a pipeline before Start: %v, want ErrNotStarted", err)
	}

	if err := tr.Start(ep); err != nil {
		t.Fatal(err)
	}
	if tr.Endpoint() != ep || tr.LocalAddr() != raft.ServerAddress(ep.Target()) {
		t.Fatalf("after Start: endpoint %p (want %p), local address %q (want the target %q)", tr.Endpoint(), ep, tr.LocalAddr(), ep.Target())
	}
	if err := tr.Start(ep); err == nil {
		t.Fatal("a second Start succeeded")
	}
	stop := make(chan struct{})
	wg := serve(tr, stop, func(rpc raft.RPC) (any, error) {
		return &raft.RequestVoteResponse{Term: rpc.Command.(*raft.RequestVoteRequest).Term, Granted: true}, nil
	})
	out, err := s.Call(ctx, methodRequestVote, vote, nil)
	if err != nil {
		t.Fatalf("an RPC after Start: %v", err)
	}
	var resp raft.RequestVoteResponse
	if err := decodeRequestVoteResponse(out, &resp); err != nil || resp.Term != 4 || !resp.Granted {
		t.Fatalf("an RPC after Start: %+v, %v", resp, err)
	}
	// And the other way, through the transport.
	peerStop := make(chan struct{})
	peerWG := serve(peer, peerStop, func(raft.RPC) (any, error) { return &raft.RequestVoteResponse{Term: 9}, nil })
	if err := tr.RequestVote("p", peer.LocalAddr(), &raft.RequestVoteRequest{Term: 9}, &resp); err != nil || resp.Term != 9 {
		t.Fatalf("RequestVote after Start: %+v, %v", resp, err)
	}
	close(peerStop)
	peerWG.Wait()
	close(stop)
	wg.Wait()

	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Call(ctx, "echo", []byte("still here"), nil); err != nil || string(got) != "still here" {
		t.Fatalf("the endpoint's other method after the transport closed: %q, %v", got, err)
	}
	if _, err := s.Call(ctx, methodRequestVote, vote, nil); erpc.CodeOf(err) != erpc.Unavailable {
		t.Fatalf("an RPC after Close: %v, want Unavailable", err)
	}
	if err := tr.Start(ep); !errors.Is(err, ErrTransportShutdown) {
		t.Fatalf("Start after Close: %v, want ErrTransportShutdown", err)
	}
	s.Close()
	peer.Close()
	ep.Close()
	leaktest.Wait(t, before)
}

// Misuse fails clearly: registering on a server that serves already, or
// twice on one server, or starting with no endpoint.
func TestRegisterMisuse(t *testing.T) {
	srv := erpc.NewServer()
	ep, err := srv.Listen(memAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if _, err := Register(srv, Config{}); erpc.CodeOf(err) != erpc.FailedPrecondition {
		t.Fatalf("Register on a serving server: %v, want FailedPrecondition", err)
	}

	srv = erpc.NewServer()
	tr, err := Register(srv, Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(srv.Methods())
	if _, err := Register(srv, Config{}); err == nil {
		t.Fatal("a second transport registered on one server")
	}
	if len(srv.Methods()) != n {
		t.Fatalf("a failed Register left methods behind: %v", srv.Methods())
	}
	if err := tr.Start(nil); err == nil {
		t.Fatal("Start with a nil endpoint succeeded")
	}
	if _, err := Register(nil, Config{}); err == nil {
		t.Fatal("Register on a nil server succeeded")
	}
	tr.Close() // never started: nothing to stop
}
