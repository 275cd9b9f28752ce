package erpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// revChatFor opens a Chat stream over c, exchanges one message, and
// returns it with the replica that serves it.
func revChatFor(t *testing.T, c *erpc.Client, reps []*revServer) (erpc.ClientStream, *revServer) {
	t.Helper()
	st, err := c.NewStream(context.Background(), "Chat")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send([]byte("m0")); err != nil {
		t.Fatal(err)
	}
	if m, err := st.Recv(); err != nil || string(m) != "m0" {
		t.Fatalf("first echo: %q, %v", m, err)
	}
	for _, r := range reps {
		if r.streams.Load() == 1 {
			return st, r
		}
	}
	t.Fatal("no replica serves the stream")
	return nil, nil
}

// revExchange sends n messages on st over about d, each echoed.
func revExchange(st erpc.ClientStream, n int, d time.Duration) error {
	for i := 1; i <= n; i++ {
		time.Sleep(d / time.Duration(n))
		msg := fmt.Sprintf("m%d", i)
		if err := st.Send([]byte(msg)); err != nil {
			if errors.Is(err, io.EOF) { // the stream ended: Recv has its status
				_, err = st.Recv()
			}
			return fmt.Errorf("send %d: %w", i, err)
		}
		m, err := st.Recv()
		if err != nil {
			return fmt.Errorf("recv %d: %w", i, err)
		}
		if string(m) != msg {
			return fmt.Errorf("recv %d: %q", i, m)
		}
	}
	return nil
}

// TestReviewStreamSurvivesResolverRemoval: a stream is in flight on a
// replica when the resolver stops listing that replica. The Client doc
// promises removed replicas "finish their calls before closing", and
// NewStream's that the stream keeps its replica; the stream should go on.
func TestReviewStreamSurvivesResolverRemoval(t *testing.T) {
	net := newMemNet()
	reps := revMemFleet(t, net, 2)
	name := newFleetName()
	testResolver.set(name, revAddrs(reps)...)
	c := newFleetClient(t, net, name)
	waitReplicas(t, c, erpc.ReplicaReady, 2)

	st, on := revChatFor(t, c, reps)
	var other string
	for _, r := range reps {
		if r != on {
			other = r.addr
		}
	}
	testResolver.set(name, other) // on is removed: its stream is in flight
	if !revWait(2*time.Second, func() bool { return replicaState(c, on.addr) != erpc.ReplicaReady }) {
		t.Fatalf("removed replica still ready: %+v", c.Replicas())
	}
	if err := revExchange(st, 15, 1500*time.Millisecond); err != nil {
		t.Fatalf("stream in flight on a removed replica was cut: %v (replicas %+v)", err, c.Replicas())
	}
	st.CloseSend()
}

// TestReviewStreamSurvivesSessionAging: WithMaxSessionAge promises the
// old session "closes when its calls have finished"; a stream open on
// it is such a call, and the stream keeps its replica (NewStream).
func TestReviewStreamSurvivesSessionAging(t *testing.T) {
	net := newMemNet()
	reps := revMemFleet(t, net, 1)
	name := newFleetName()
	testResolver.set(name, revAddrs(reps)...)
	c := newFleetClient(t, net, name, erpc.WithMaxSessionAge(100*time.Millisecond))
	waitReplicas(t, c, erpc.ReplicaReady, 1)

	st, on := revChatFor(t, c, reps)
	before := on.ups.Load()
	// Over 800 ms the session ages out several times (100 ms ±20 %).
	err := revExchange(st, 16, 800*time.Millisecond)
	if on.ups.Load() == before {
		t.Fatalf("no session was renewed (ups %d): the fault was not injected", before)
	}
	if err != nil {
		t.Fatalf("stream cut when its session aged out (%d sessions renewed): %v", on.ups.Load()-before, err)
	}
	st.CloseSend()
}
