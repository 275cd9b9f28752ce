package erpc_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// ourCred is this process's credentials, as the kernel reports a peer's.
func ourCred() erpc.LocalCred {
	return erpc.LocalCred{PID: int32(os.Getpid()), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
}

// TestPeerAuthShmLocalCred: over shm, a handler sees its peer's kernel
// credentials, here its own process's pid, uid and gid, through the
// request, the handler's context and a stream handler's context; the
// client sees the server's on its session. No TLS: TLS and SPIFFEID stay
// empty.
func TestPeerAuthShmLocalCred(t *testing.T) {
	want := ourCred()
	var fromReq, fromCtx, fromStream atomic.Pointer[erpc.PeerAuth]
	srv := erpc.NewServer()
	srv.HandleRaw("Raw", func(q erpc.Request) {
		a := q.PeerAuth()
		fromReq.Store(&a)
		q.Respond(nil)
	})
	srv.Handle("Ctx", func(ctx context.Context, req []byte) ([]byte, error) {
		if a, ok := erpc.PeerAuthFromContext(ctx); ok {
			fromCtx.Store(&a)
		}
		return req, nil
	})
	srv.HandleStream("Stream", func(ss erpc.ServerStream) error {
		if a, ok := erpc.PeerAuthFromContext(ss.Context()); ok {
			fromStream.Store(&a)
		}
		return nil
	})
	ep := listenT(t, srv, "shm://"+filepath.Join(t.TempDir(), "auth.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, m := range []string{"Raw", "Ctx"} {
		if _, err := s.Call(ctx, m, []byte("x"), nil); err != nil {
			t.Fatal(m, err)
		}
	}
	st, err := s.NewStream(ctx, "Stream")
	if err != nil {
		t.Fatal(err)
	}
	st.CloseSend()
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("stream: %v", err)
	}
	for name, a := range map[string]*erpc.PeerAuth{"request": fromReq.Load(), "context": fromCtx.Load(), "stream": fromStream.Load()} {
		if a == nil || a.Local == nil || *a.Local != want || a.TLS != nil || a.SPIFFEID != "" {
			t.Errorf("%s: PeerAuth %+v; want Local %+v only", name, a, want)
		}
	}
	if a := s.PeerAuth(); a.Local == nil || *a.Local != want {
		t.Errorf("the client's view of the server: %+v; want Local %+v", a, want)
	}
}

// TestPeerAuthShmInterceptorAuthorizes: the interceptor that refuses an
// unproven peer (TestPeerAuthInterceptorRefusesUnprovenPeer) lets a
// same-host peer of this user through over shm, and refuses it when it
// wants another user.
func TestPeerAuthShmInterceptorAuthorizes(t *testing.T) {
	for _, tc := range []struct {
		uid     uint32
		allowed bool
	}{{uint32(os.Getuid()), true}, {uint32(os.Getuid()) + 1, false}} {
		var refused, ran atomic.Int32
		srv := erpc.NewServer(erpc.ChainUnaryInterceptor(rejectUnlessLocalUser(tc.uid, &refused)))
		srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) { ran.Add(1); return req, nil })
		ep := listenT(t, srv, "shm://"+filepath.Join(t.TempDir(), "icpt.sock"))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := erpc.Dial(ctx, ep.Target())
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Call(ctx, "Echo", []byte("x"), nil)
		s.Close()
		cancel()
		switch {
		case tc.allowed && (err != nil || ran.Load() != 1 || refused.Load() != 0):
			t.Errorf("uid %d allowed: %v, %d runs, %d refusals", tc.uid, err, ran.Load(), refused.Load())
		case !tc.allowed && (erpc.CodeOf(err) != erpc.PermissionDenied || ran.Load() != 0 || refused.Load() != 1):
			t.Errorf("uid %d refused: %v, %d runs, %d refusals", tc.uid, err, ran.Load(), refused.Load())
		}
	}
}

// TestPeerAuthZeroAfterAnswer: like every accessor, PeerAuth answers zero
// once the request is answered, though it had the peer's credentials
// before, and even after the endpoint reused the request's memory.
func TestPeerAuthZeroAfterAnswer(t *testing.T) {
	type keptReq struct {
		q      erpc.Request
		before erpc.PeerAuth
	}
	kept := make(chan keptReq, 1)
	srv := erpc.NewServer()
	srv.HandleRaw("Keep", func(q erpc.Request) {
		before := q.PeerAuth()
		q.Respond(nil)
		select {
		case kept <- keptReq{q, before}:
		default:
		}
	})
	ep := listenT(t, srv, "shm://"+filepath.Join(t.TempDir(), "zero.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 3 { // later requests reuse the first one's memory
		if _, err := s.Call(ctx, "Keep", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	k := <-kept
	q := k.q
	if k.before.Local == nil {
		t.Fatal("the handler saw no credentials before answering")
	}
	if a := q.PeerAuth(); a != (erpc.PeerAuth{}) {
		t.Fatalf("PeerAuth after the answer: %+v, want zero", a)
	}
}
