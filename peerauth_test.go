package erpc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestPeerAuthPlaintextUDPIsZero: a plaintext session over UDP proves
// nothing of its peer: the handler's context is a handler's (ok), with a
// zero PeerAuth; the request's is zero; so is the client's view of the
// server. A context that is not a handler's says so.
func TestPeerAuthPlaintextUDPIsZero(t *testing.T) {
	var fromCtx, fromReq atomic.Pointer[erpc.PeerAuth]
	var ctxOK atomic.Bool
	srv := erpc.NewServer()
	if err := srv.Handle("Who", func(ctx context.Context, req []byte) ([]byte, error) {
		a, ok := erpc.PeerAuthFromContext(ctx)
		fromCtx.Store(&a)
		ctxOK.Store(ok)
		return req, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := srv.HandleRaw("WhoRaw", func(q erpc.Request) {
		a := q.PeerAuth()
		fromReq.Store(&a)
		q.Respond(nil)
	}); err != nil {
		t.Fatal(err)
	}
	ep := listenT(t, srv, "127.0.0.1:0")
	s, err := erpc.Dial(context.Background(), ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, m := range []string{"Who", "WhoRaw"} {
		if _, err := call(t, s, m, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	c, r := fromCtx.Load(), fromReq.Load()
	if !ctxOK.Load() || c == nil || *c != (erpc.PeerAuth{}) || r == nil || *r != (erpc.PeerAuth{}) || s.PeerAuth() != (erpc.PeerAuth{}) {
		t.Fatalf("plaintext UDP: context %+v (ok %v), request %+v, session %+v; want all zero, ok", c, ctxOK.Load(), r, s.PeerAuth())
	}
	if _, ok := erpc.PeerAuthFromContext(context.Background()); ok {
		t.Fatal("PeerAuthFromContext(context.Background()) says it is a handler's context")
	}
}

// rejectUnlessLocalUser is an interceptor that authorizes by PeerAuth:
// only a peer the kernel vouches for as user uid may call; it counts its
// refusals.
func rejectUnlessLocalUser(uid uint32, refused *atomic.Int32) erpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *erpc.UnaryServerInfo, next erpc.UnaryHandler) (any, error) {
		a, ok := erpc.PeerAuthFromContext(ctx)
		if !ok || a.Local == nil || a.Local.UID != uid {
			refused.Add(1)
			return nil, &erpc.Error{Code: erpc.PermissionDenied, Msg: "not a local peer of this user"}
		}
		return next(ctx, req)
	}
}

// TestPeerAuthInterceptorRefusesUnprovenPeer: the interceptor refuses a
// plaintext UDP caller, who proves nothing, with PermissionDenied, and
// the handler never runs.
func TestPeerAuthInterceptorRefusesUnprovenPeer(t *testing.T) {
	var refused, ran atomic.Int32
	srv := erpc.NewServer(erpc.ChainUnaryInterceptor(rejectUnlessLocalUser(0, &refused)))
	srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) { ran.Add(1); return req, nil })
	ep := listenT(t, srv, "127.0.0.1:0")
	s, err := erpc.Dial(context.Background(), ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = s.Call(ctx, "Echo", []byte("x"), nil)
	if erpc.CodeOf(err) != erpc.PermissionDenied || refused.Load() != 1 || ran.Load() != 0 {
		t.Fatalf("got %v, %d refusals, %d runs; want PermissionDenied, 1, 0", err, refused.Load(), ran.Load())
	}
}
