package raft

import (
	"errors"
	"fmt"
	"time"

	"github.com/erpc-go/erpc/contrib/raft/rawkv"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// SysRawNode is the raft scenario's system that runs contrib/raft/rawkv:
// etcd raft's RawNode on each replica's erpc event loop, as eRPC ran Raft.
const SysRawNode = "etcd-rawnode"

// startRawNode brings up a rawkv cluster whose endpoints all spin as -spin says,
// and returns the replicas' addresses, the leader's first.
func (s *raftServer) startRawNode(spin time.Duration, network string) (string, error) {
	c, err := rawkv.StartCluster(rawkv.ClusterConfig{
		Network:         network,
		EndpointOptions: systems.SpinOptions(spin),
		Replica: func(rc *rawkv.Config) {
			// Elections after 1-2 s of silence, as hashicorp/raft's 1 s
			// timeouts here: the benchmark measures the commit path, and a
			// replica starved of its core for 100 ms must not call one.
			rc.ElectionTick = 100
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
	s.rk = c
	return leaderFirst(c.Addrs(), l), nil
}

// proposeRawNode is apply's counterpart for rawkv: PUTs as
// Replica.Propose on the leader, one at a time, for d after a short
// warm-up; it returns "count p50_ns p99_ns".
func (s *raftServer) proposeRawNode(d time.Duration) (string, error) {
	key := make([]byte, raftKeySize)
	val := make([]byte, raftValueSize)
	lat := make([]time.Duration, 0, 1<<16)
	done := make(chan error, 1)
	warm := time.Now().Add(d / 5)
	end := warm.Add(d)
	for i := 0; time.Now().Before(end); i++ {
		l, err := s.rk.Leader(5 * time.Second)
		if err != nil {
			return "", err
		}
		copy(key, fmt.Sprintf("key-%d", i%raftKeys))
		t0 := time.Now()
		if err := s.rk.Replica(l).Propose(key, val, func(err error) { done <- err }); err != nil {
			return "", err
		}
		var perr error
		select {
		case perr = <-done:
		case <-time.After(5 * time.Second):
			return "", errors.New("a proposal was not applied within 5 s")
		}
		dt := time.Since(t0)
		if perr == nil && t0.After(warm) {
			lat = append(lat, dt)
		}
	}
	if len(lat) == 0 {
		return "", errors.New("no proposal succeeded")
	}
	return latencySummary(lat), nil
}
