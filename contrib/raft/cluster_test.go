package raft_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/erpc-go/erpc/contrib/raft/internal/leaktest"
	"github.com/erpc-go/erpc/contrib/raft/kvstore"
	"github.com/hashicorp/raft"
)

// Cluster tests: 3 replicas of the kvstore FSM in this process, raft over
// this transport on erpc's in-memory network, driven only through raft's
// public API. Partitions use the transport's Drop hook (kvstore.Faults):
// a cut link fails RPCs at once, in both directions when a node is
// isolated.

func startCluster(t *testing.T, cfg kvstore.ClusterConfig) *kvstore.Cluster {
	t.Helper()
	if cfg.Network == "" {
		cfg.Network = "mem"
	}
	c, err := kvstore.StartCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func newClient(t *testing.T, c *kvstore.Cluster, id uint64) *kvstore.Client {
	t.Helper()
	cl, err := kvstore.NewClient(id, "mem://", c.APIAddrs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func leader(t *testing.T, c *kvstore.Cluster) int {
	t.Helper()
	i, err := c.Leader(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func puts(t *testing.T, cl *kvstore.Client, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cl.Put(ctx, []byte("key-"+strconv.Itoa(i%50)), []byte("value-"+strconv.Itoa(i)))
		cancel()
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
}

// converge waits until every running replica has applied the same state.
func converge(t *testing.T, c *kvstore.Cluster) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		same := true
		first := c.Replica(0)
		for i := 1; i < c.N(); i++ {
			if r := c.Replica(i); r == nil || first == nil || !first.FSM.Equal(r.FSM) || r.Raft.AppliedIndex() != first.Raft.AppliedIndex() {
				same = false
			}
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			for i := range c.N() {
				if r := c.Replica(i); r != nil {
					st := r.Raft.Stats()
					t.Logf("replica %d: %v applied %d keys %d term %s last %s commit %s snap %s contact %s", i, r.Raft.State(), r.Raft.AppliedIndex(), r.FSM.Len(), st["term"], st["last_log_index"], st["commit_index"], st["last_snapshot_index"], st["last_contact"])
				}
			}
			t.Fatal("replicas did not converge")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestClusterElection(t *testing.T) {
	c := startCluster(t, kvstore.ClusterConfig{})
	l := leader(t, c)
	leaders := 0
	for i := range c.N() {
		if c.Replica(i).Raft.State() == raft.Leader {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders", leaders)
	}
	cl := newClient(t, c, 1)
	puts(t, cl, 0, 20)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, ok, err := cl.Get(ctx, []byte("key-19"))
	if err != nil || !ok || string(v) != "value-19" {
		t.Fatalf("get: %q %v %v", v, ok, err)
	}
	converge(t, c)
	t.Logf("leader r%d", l)
}

func TestClusterLeaderFailure(t *testing.T) {
	c := startCluster(t, kvstore.ClusterConfig{})
	old := leader(t, c)
	cl := newClient(t, c, 1)
	puts(t, cl, 0, 10)
	if err := c.Stop(old); err != nil {
		t.Fatal(err)
	}
	l := leader(t, c)
	if l == old {
		t.Fatal("stopped replica still leader")
	}
	puts(t, cl, 10, 10) // the client finds the new leader
	if err := c.Restart(old); err != nil {
		t.Fatal(err)
	}
	puts(t, cl, 20, 5)
	converge(t, c)
}

func TestClusterLaggingFollower(t *testing.T) {
	c := startCluster(t, kvstore.ClusterConfig{})
	l := leader(t, c)
	f := (l + 1) % c.N()
	c.Faults.Isolate(c.RaftAddr(f))
	cl := newClient(t, c, 1)
	puts(t, cl, 0, 200)
	if c.Replica(f).Raft.AppliedIndex() >= c.Replica(l).Raft.AppliedIndex() {
		t.Fatal("isolated follower kept up")
	}
	c.Faults.Heal()
	converge(t, c)
}

// A follower that missed entries the leader has since compacted away must
// get the leader's snapshot over InstallSnapshot; a restarted replica
// restores from its own snapshot.
func TestClusterSnapshotAndRestore(t *testing.T) {
	c := startCluster(t, kvstore.ClusterConfig{Raft: func(rc *raft.Config) {
		rc.SnapshotThreshold = 50
		rc.TrailingLogs = 10
		rc.SnapshotInterval = time.Hour // snapshots only when asked
	}})
	l := leader(t, c)
	f := (l + 1) % c.N()
	c.Faults.Isolate(c.RaftAddr(f))
	cl := newClient(t, c, 1)
	// Big values, so the snapshot is a few chunks.
	big := make([]byte, 64<<10)
	for i := range 40 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cl.Put(ctx, []byte(fmt.Sprintf("big-%d", i)), append(big[:len(big):len(big)], byte(i)))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	puts(t, cl, 0, 60)
	// Snapshot (and so compact) on both connected replicas, so whichever
	// leads after a (slow machine) leader change lacks the old entries.
	for i := range c.N() {
		if i != f {
			if err := c.Replica(i).Raft.Snapshot().Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	puts(t, cl, 60, 20)
	c.Faults.Heal()
	t.Log("healed")
	converge(t, c)
	if got := c.Replica(f).Raft.Stats()["last_snapshot_index"]; got == "0" {
		t.Fatal("follower caught up without a snapshot")
	}
	// Restart the follower: it restores the snapshot, then replays the log.
	if err := c.Restart(f); err != nil {
		t.Fatal(err)
	}
	t.Log("restarted")
	converge(t, c)
}

func TestClusterPartitionedLeaderStepsDown(t *testing.T) {
	c := startCluster(t, kvstore.ClusterConfig{})
	old := leader(t, c)
	cl := newClient(t, c, 1)
	puts(t, cl, 0, 10)
	c.Faults.Isolate(c.RaftAddr(old))
	deadline := time.Now().Add(5 * time.Second)
	for c.Replica(old).Raft.State() == raft.Leader {
		if time.Now().After(deadline) {
			t.Fatal("isolated leader did not step down")
		}
		time.Sleep(5 * time.Millisecond)
	}
	l := leader(t, c)
	if l == old {
		t.Fatal("isolated replica is leader")
	}
	puts(t, cl, 10, 10)
	c.Faults.Heal()
	puts(t, cl, 20, 5)
	converge(t, c)
	if c.Replica(old).Raft.State() == raft.Leader && leader(t, c) != old {
		t.Fatal("two leaders")
	}
}

// A whole cluster, raft included, leaves no goroutine behind once stopped:
// the transports' Close waits for every goroutine they started.
func TestClusterCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	c, err := kvstore.StartCluster(kvstore.ClusterConfig{Network: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(5 * time.Second); err != nil {
		c.Close()
		t.Fatal(err)
	}
	cl, err := kvstore.NewClient(1, "mem://", c.APIAddrs())
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	puts(t, cl, 0, 20)
	if err := c.Restart(0); err != nil { // a restarted replica too
		t.Fatal(err)
	}
	puts(t, cl, 20, 5)
	cl.Close()
	c.Close()
	leaktest.Wait(t, before)
}
