package rawkv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// A replica's methods are served from the endpoint's first packet: before
// StartReplica attaches the replica they answer Unavailable ("starting"),
// which a peer's raft counts as a lost message and a client as a replica
// to move on from, not Unimplemented.
func TestServiceBeforeReplica(t *testing.T) {
	srv := erpc.NewServer()
	svc, err := Register(srv)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("mem://rawkv-service-%d", time.Now().UnixNano())
	ep, err := srv.Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Register(srv); erpc.CodeOf(err) != erpc.FailedPrecondition {
		t.Fatalf("Register on a serving server: %v, want FailedPrecondition", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := command{op: OpPut, client: 7, seq: 1, key: key(1), value: value(1)}
	for _, m := range []string{MethodMsg, MethodPut, MethodGet} {
		if _, err := s.Call(ctx, m, put.appendTo(nil), nil); erpc.CodeOf(err) != erpc.Unavailable {
			t.Fatalf("%s before StartReplica: %v, want Unavailable", m, err)
		}
	}
	if _, err := StartReplica(ctx, Config{ID: 1, Peers: []string{name}, Endpoint: ep}); err == nil {
		t.Fatal("StartReplica without a Service succeeded")
	}

	// A one-replica cluster: attached, it elects itself and serves.
	r, err := StartReplica(ctx, Config{ID: 1, Peers: []string{name}, Endpoint: ep, Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := StartReplica(ctx, Config{ID: 1, Peers: []string{name}, Endpoint: ep, Service: svc}); err == nil {
		t.Fatal("a second replica attached to one service")
	}
	for {
		resp, err := s.Call(ctx, MethodPut, put.appendTo(nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp[0] == statusOK {
			break
		}
		time.Sleep(10 * time.Millisecond) // not leader yet
	}
}
