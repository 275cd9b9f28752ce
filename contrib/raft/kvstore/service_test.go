package kvstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/hashicorp/raft"
)

// MethodDo is served from the endpoint's first packet: before a replica is
// attached to the service it answers Unavailable ("starting"), which the
// client treats as a replica to move on from, not Unimplemented.
func TestServiceBeforeReplica(t *testing.T) {
	srv := erpc.NewServer()
	svc, err := Register(srv)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("mem://kvstore-service-%d", time.Now().UnixNano())
	ep, err := srv.Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
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
	cmd := Command{Op: OpGet, Client: 1, Seq: 1, Key: []byte("k")}
	if _, err := s.Call(ctx, MethodDo, cmd.appendTo(nil), nil); erpc.CodeOf(err) != erpc.Unavailable {
		t.Fatalf("MethodDo before StartReplica: %v, want Unavailable", err)
	}
	if _, err := StartReplica(ReplicaConfig{ID: "r0", Raft: FastConfig()}); err == nil {
		t.Fatal("StartReplica without a Service succeeded")
	}

	// With a replica attached, the same call reaches it (a lone replica
	// that leads nobody answers "not leader").
	logs := raft.NewInmemStore()
	_, trans := raft.NewInmemTransport("")
	rp, err := StartReplica(ReplicaConfig{ID: "r0", Raft: FastConfig(), Logs: logs, Stable: logs,
		Snaps: raft.NewInmemSnapshotStore(), Transport: trans, Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Raft.Shutdown()
	resp, err := s.Call(ctx, MethodDo, cmd.appendTo(nil), nil)
	if err != nil || len(resp) == 0 || resp[0] != statusNotLeader {
		t.Fatalf("MethodDo with a replica: %q, %v; want not leader", resp, err)
	}
	if _, err := StartReplica(ReplicaConfig{ID: "r1", Raft: FastConfig(), Logs: logs, Stable: logs,
		Snaps: raft.NewInmemSnapshotStore(), Transport: trans, Service: svc}); err == nil {
		t.Fatal("a second replica attached to one service")
	}
}
