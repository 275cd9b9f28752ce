package raft

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	erpcraft "github.com/erpc-go/erpc/contrib/raft"
	"github.com/erpc-go/erpc/contrib/raft/kvstore"
	"github.com/erpc-go/erpc/contrib/raft/rawkv"
	"github.com/hashicorp/raft"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// raftServer is the cluster process. It starts idle; "start" brings the
// cluster up, "apply" measures raft.Apply on the leader.
type raftServer struct {
	mu sync.Mutex
	c  *kvstore.Cluster
	rk *rawkv.Cluster // etcd-rawnode's cluster, instead of c
}

func newRaftServer(proc.Config) (proc.Impl, error) { return &raftServer{}, nil }

func (s *raftServer) Addr() string { return "-" }

func (s *raftServer) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		s.c.Close()
		s.c = nil
	}
	if s.rk != nil {
		s.rk.Close()
		s.rk = nil
	}
}

func (s *raftServer) Control(args []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case args[0] == "start" && len(args) == 5:
		if s.c != nil || s.rk != nil {
			return "", errors.New("already started")
		}
		spin, err := systems.ParseSpin(args[2])
		if err != nil {
			return "", err
		}
		inflight, err := strconv.Atoi(args[3])
		if err != nil {
			return "", err
		}
		return s.start(args[1], spin, inflight, args[4])
	case args[0] == "apply" && len(args) == 2:
		d, err := time.ParseDuration(args[1])
		if err != nil {
			return "", err
		}
		return s.apply(d)
	}
	return "", fmt.Errorf("unknown command %q", strings.Join(args, " "))
}

// start brings up the cluster, its erpc endpoints on network (udp or shm),
// and returns the client API addresses, the leader's first.
func (s *raftServer) start(transport string, spin time.Duration, inflight int, network string) (string, error) {
	if transport == SysRawNode {
		return s.startRawNode(spin, network)
	}
	if transport == "raft-tcp" {
		// The replicas' erpc endpoints carry only the client hop there. On
		// the cluster's one core a spinning loop (runtime.Gosched) would
		// hold off the netpoller that raft-tcp's sockets wait in: the Go
		// scheduler polls it only when no goroutine is runnable.
		spin = 0
	}
	c, err := kvstore.StartCluster(kvstore.ClusterConfig{
		Network:         network,
		RaftTransport:   transport,
		EndpointOptions: systems.SpinOptions(spin),
		Transport:       erpcraft.Config{MaxInFlight: inflight},
		Raft: func(rc *raft.Config) {
			// raft's own timeouts (1 s), not the tests' short ones: the
			// benchmark measures the commit path, not elections.
			d := raft.DefaultConfig()
			rc.HeartbeatTimeout, rc.ElectionTimeout = d.HeartbeatTimeout, d.ElectionTimeout
			rc.LeaderLeaseTimeout, rc.CommitTimeout = d.LeaderLeaseTimeout, d.CommitTimeout
		},
	})
	if err != nil {
		return "", err
	}
	l, err := c.Leader(10 * time.Second)
	if err != nil {
		c.Close()
		return "", err
	}
	s.c = c
	return leaderFirst(c.APIAddrs(), l), nil
}

// leaderFirst is the control line's list of addresses: the leader's (at
// index l) first, then the others.
func leaderFirst(addrs []string, l int) string {
	out := []string{addrs[l]}
	for i, a := range addrs {
		if i != l {
			out = append(out, a)
		}
	}
	return strings.Join(out, ",")
}

// apply issues PUTs as raft.Apply on the leader, one at a time, for d
// after a short warm-up, and returns "count p50_ns p99_ns".
func (s *raftServer) apply(d time.Duration) (string, error) {
	if s.rk != nil {
		return s.proposeRawNode(d)
	}
	if s.c == nil {
		return "", errors.New("not started")
	}
	key := make([]byte, raftKeySize)
	val := make([]byte, raftValueSize)
	lat := make([]time.Duration, 0, 1<<16)
	warm := time.Now().Add(d / 5)
	end := warm.Add(d)
	for i := 0; time.Now().Before(end); i++ {
		l, err := s.c.Leader(5 * time.Second)
		if err != nil {
			return "", err
		}
		copy(key, fmt.Sprintf("key-%d", i%raftKeys))
		cmd := kvstore.Command{Op: kvstore.OpPut, Key: key, Value: val}
		t0 := time.Now()
		err = s.c.Replica(l).Raft.Apply(kvstore.Encode(&cmd), 5*time.Second).Error()
		dt := time.Since(t0)
		if err != nil {
			continue
		}
		if t0.After(warm) {
			lat = append(lat, dt)
		}
	}
	if len(lat) == 0 {
		return "", errors.New("no Apply succeeded")
	}
	return latencySummary(lat), nil
}

// latencySummary sorts lat and returns "count p50_ns p99_ns".
func latencySummary(lat []time.Duration) string {
	slices.Sort(lat)
	q := func(p float64) int64 { return int64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) }
	return fmt.Sprintf("%d %d %d", len(lat), q(0.5), q(0.99))
}

func init() { proc.Register("raft", newRaftServer) }
