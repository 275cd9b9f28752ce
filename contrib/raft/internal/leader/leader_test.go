package leader

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
)

// listen opens an endpoint on n that serves fn as "do", or, with fn nil,
// a client endpoint.
func listen(t *testing.T, n *memnet.Network, fn func(context.Context, []byte) ([]byte, error)) *erpc.Endpoint {
	tr, err := n.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	var ep *erpc.Endpoint
	if fn == nil {
		ep, err = erpc.Listen("", erpc.WithTransport(tr))
	} else {
		srv := erpc.NewServer()
		if err := srv.Handle("do", fn); err != nil {
			t.Fatal(err)
		}
		ep, err = srv.Listen("", erpc.WithTransport(tr))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

// TestRouterFollowsRedirectsAndRetries: a follower redirects to the leader,
// the leader first says "retry", then answers; a dead replica is skipped.
func TestRouterFollowsRedirectsAndRetries(t *testing.T) {
	n := memnet.NewNetwork(1, memnet.LinkConfig{})
	var tries atomic.Int32
	leaderEP := listen(t, n, func(_ context.Context, req []byte) ([]byte, error) {
		if tries.Add(1) == 1 {
			return []byte{StatusRetry}, nil
		}
		return append([]byte{StatusOK}, req...), nil
	})
	leaderAddr := leaderEP.Addr().String()
	follower := listen(t, n, func(context.Context, []byte) ([]byte, error) {
		return append([]byte{StatusNotLeader}, leaderAddr...), nil
	})
	client := listen(t, n, nil)
	dead := listen(t, n, nil)
	deadAddr := dead.Addr().String()
	dead.Close()
	r := NewRouter(client, []string{deadAddr, follower.Addr().String(), leaderAddr})
	r.AttemptTimeout = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.Do(ctx, "do", []byte("x"), false)
	if err != nil || string(resp) != "\x00x" {
		t.Fatalf("Do = %q, %v", resp, err)
	}
	if tries.Load() != 2 {
		t.Fatalf("leader tried %d times, want 2 (one retry)", tries.Load())
	}
	if r.leader != leaderAddr {
		t.Fatalf("router's leader is %s, want %s", r.leader, leaderAddr)
	}
	// Now it goes to the leader directly.
	if _, err := r.Do(ctx, "do", []byte("y"), false); err != nil || tries.Load() != 3 {
		t.Fatalf("second Do: %v, leader tries %d", err, tries.Load())
	}
}

func TestRouterGivesUp(t *testing.T) {
	n := memnet.NewNetwork(1, memnet.LinkConfig{})
	srv := listen(t, n, func(context.Context, []byte) ([]byte, error) { return []byte{StatusNotLeader}, nil })
	client := listen(t, n, nil)
	r := NewRouter(client, []string{srv.Addr().String()})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.Do(ctx, "do", nil, false); !errors.Is(err, ErrGaveUp) {
		t.Fatalf("Do with no leader anywhere: %v, want ErrGaveUp", err)
	}
}

// TestRouterRedialsARestartedReplica: a replica restarted under the same
// name on the in-memory network gets a new address; the router drops the
// session that failed and dials the name again.
func TestRouterRedialsARestartedReplica(t *testing.T) {
	name := fmt.Sprintf("mem://leader-test-%d", time.Now().UnixNano())
	serve := func(answer string) *erpc.Endpoint {
		srv := erpc.NewServer()
		if err := srv.Handle("do", func(context.Context, []byte) ([]byte, error) { return []byte{StatusOK, answer[0]}, nil }); err != nil {
			t.Fatal(err)
		}
		ep, err := srv.Listen(name)
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	first := serve("1")
	client, err := erpc.Listen("mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	r := NewRouter(client, []string{name})
	r.AttemptTimeout = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := r.Do(ctx, "do", nil, false); err != nil || string(resp[1:]) != "1" {
		t.Fatalf("first incarnation: %q, %v", resp, err)
	}
	first.Close()
	second := serve("2")
	t.Cleanup(func() { second.Close() })
	if resp, err := r.Do(ctx, "do", nil, false); err != nil || string(resp[1:]) != "2" {
		t.Fatalf("restarted replica: %q, %v", resp, err)
	}
}
