package rawkv

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/contrib/raft/internal/leaktest"
	"github.com/erpc-go/erpc/contrib/raft/internal/localnet"
)

// startCluster starts a 3-replica cluster and a client and waits for a
// leader; everything is closed at the end of the test.
func startCluster(t *testing.T, network string, adjust func(*Config)) (*Cluster, *Client, int) {
	t.Helper()
	c, err := StartCluster(ClusterConfig{Network: network, Replica: adjust})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	l, err := c.Leader(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(0, localnet.Client(network), c.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return c, cl, l
}

func key(i int) []byte { return fmt.Appendf(make([]byte, 0, 16), "key-%012d", i) }

func value(i int) []byte {
	v := make([]byte, 64)
	copy(v, fmt.Sprintf("value-%d", i))
	return v
}

func put(t *testing.T, cl *Client, i int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Put(ctx, key(i%20), value(i)); err != nil {
		t.Fatalf("put %d: %v", i, err)
	}
}

// converged waits until the open replicas have applied the same index and
// hold equal stores, and returns the store.
func converged(t *testing.T, c *Cluster, skip int) map[string][]byte {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var first map[string][]byte
		var idx uint64
		same := true
		for i := range 3 {
			if i == skip {
				continue
			}
			r := c.Replica(i)
			ix := r.Applied()
			m, err := r.Dump()
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first, idx = m, ix
			} else if ix != idx || !maps.EqualFunc(first, m, bytes.Equal) {
				same = false
			}
		}
		if same {
			return first
		}
		if time.Now().After(deadline) {
			t.Fatal("replicas did not converge")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func checkStore(t *testing.T, m map[string][]byte, n int) {
	t.Helper()
	for i := max(0, n-20); i < n; i++ {
		if got := m[string(key(i%20))]; !bytes.Equal(got, value(i)) {
			t.Errorf("key %d: got %q, want %q", i%20, got, value(i))
		}
	}
}

// TestReplicate: a leader is elected, PUTs through it are applied on all
// three replicas, and a GET reads the last one.
func TestReplicate(t *testing.T) {
	for _, network := range []string{"udp", "mem"} {
		t.Run(network, func(t *testing.T) {
			c, cl, _ := startCluster(t, network, nil)
			const n = 60
			for i := range n {
				put(t, cl, i)
			}
			checkStore(t, converged(t, c, -1), n)
			v, ok, err := cl.Get(context.Background(), key((n-1)%20))
			if err != nil || !ok || !bytes.Equal(v, value(n-1)) {
				t.Fatalf("get: %q %v %v", v, ok, err)
			}
		})
	}
}

// rawCall sends one encoded command to replica i.
func rawCall(t *testing.T, c *Cluster, i int, method string, cmd command) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, c.Addrs()[i])
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := s.Call(ctx, method, cmd.appendTo(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestFollowerRedirects: a follower answers with the leader's address.
func TestFollowerRedirects(t *testing.T) {
	c, cl, l := startCluster(t, "mem", nil)
	put(t, cl, 0) // the followers have heard from the leader
	converged(t, c, -1)
	f := (l + 1) % 3
	resp := rawCall(t, c, f, MethodPut, command{op: OpPut, client: 7, seq: 1, key: key(1), value: value(1)})
	if resp[0] != statusNotLeader || string(resp[1:]) != c.Addrs()[l] {
		t.Fatalf("follower answered %q, want a redirect to %s", resp, c.Addrs()[l])
	}
}

// TestDedupe: a retry of the last command is answered from the session
// table; an older one is refused and not applied again.
func TestDedupe(t *testing.T) {
	c, _, l := startCluster(t, "mem", nil)
	cmd := func(seq uint64, v int) command {
		return command{op: OpPut, client: 9, seq: seq, key: key(0), value: value(v)}
	}
	for _, step := range []struct {
		c    command
		want byte
	}{{cmd(1, 1), statusOK}, {cmd(2, 2), statusOK}, {cmd(2, 2), statusOK}, {cmd(1, 1), statusStale}} {
		if resp := rawCall(t, c, l, MethodPut, step.c); resp[0] != step.want {
			t.Fatalf("seq %d: status %d, want %d", step.c.seq, resp[0], step.want)
		}
	}
	if got := converged(t, c, -1)[string(key(0))]; !bytes.Equal(got, value(2)) {
		t.Fatalf("store has %q, want %q", got, value(2))
	}
}

// TestLeaderFailover: after the leader closes, the others elect a new one
// and the client's PUTs go on there.
func TestLeaderFailover(t *testing.T) {
	c, cl, l := startCluster(t, "mem", nil)
	for i := range 20 {
		put(t, cl, i)
	}
	c.Replica(l).Close()
	l2, err := c.Leader(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l2 == l {
		t.Fatalf("closed replica %d still leads", l)
	}
	for i := 20; i < 50; i++ {
		put(t, cl, i)
	}
	checkStore(t, converged(t, c, l), 50)
}

// TestSnapshotCatchUp: a follower cut off while the log is compacted past
// it catches up from a snapshot once it is reachable again.
func TestSnapshotCatchUp(t *testing.T) {
	var cut atomic.Uint64 // a replica ID cut off from the others
	c, cl, l := startCluster(t, "mem", func(rc *Config) {
		rc.SnapshotEvery, rc.SnapshotKeep = 10, 2
		rc.Drop = func(from, to uint64) bool { id := cut.Load(); return from == id || to == id }
	})
	f := (l + 1) % 3
	cut.Store(uint64(f + 1))
	for i := range 60 {
		put(t, cl, i)
	}
	if a := c.Replica(f).Applied(); a >= 60 {
		t.Fatalf("cut-off follower applied %d", a)
	}
	cut.Store(0)
	checkStore(t, converged(t, c, -1), 60)
}

// TestShm: a cluster and its client on the shared-memory transport
// replicate PUTs, and closing the cluster removes its socket directory.
func TestShm(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("shm needs Linux")
	}
	c, cl, _ := startCluster(t, "shm", nil)
	for i := range 30 {
		put(t, cl, i)
	}
	checkStore(t, converged(t, c, -1), 30)
	dir := filepath.Dir(strings.TrimPrefix(c.Addrs()[0], "shm://"))
	c.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("socket directory %s left behind: %v", dir, err)
	}
}

// TestCloseLeavesNoGoroutines: a cluster and a client, once closed, leave
// no goroutines behind.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	c, err := StartCluster(ClusterConfig{Network: "udp"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(10 * time.Second); err != nil {
		c.Close()
		t.Fatal(err)
	}
	cl, err := NewClient(0, "127.0.0.1:0", c.Addrs())
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 10 {
		if err := cl.Put(ctx, key(i), value(i)); err != nil {
			t.Error(err)
		}
	}
	cl.Close()
	c.Close()
	leaktest.Wait(t, before)
}

func TestStateRoundTrip(t *testing.T) {
	kv := map[string][]byte{"a": []byte("1"), "b": {}, "c": []byte("333")}
	sessions := map[uint64]session{1: {seq: 4, result: okResult(true, []byte("x"))}, 9: {seq: 1, result: okResult(false, nil)}}
	b := encodeState(kv, sessions)
	kv2, s2, err := decodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(kv, kv2, bytes.Equal) || len(s2) != 2 || s2[1].seq != 4 || !bytes.Equal(s2[1].result, sessions[1].result) {
		t.Fatalf("got %v %v", kv2, s2)
	}
	if _, _, err := decodeState(b[:len(b)-1]); err == nil {
		t.Fatal("truncated state decoded")
	}
	var c command
	want := command{op: OpGet, client: 3, seq: 5, key: []byte("k")}
	if err := c.decode(want.appendTo(nil)); err != nil || c.op != OpGet || c.client != 3 || c.seq != 5 || string(c.key) != "k" || len(c.value) != 0 {
		t.Fatalf("command: %+v %v", c, err)
	}
}
