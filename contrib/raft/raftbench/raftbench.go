// Package raftbench measures the latency of a replicated PUT: a 3-replica
// kvstore cluster, all in this process (each replica its own erpc endpoint
// and raft instance, in-memory log and snapshot stores, so no disk), and
// one client that issues PUTs one at a time, each waiting for its answer,
// which comes once the entry is committed by a majority and applied on the
// leader.
//
// Transport "erpc" runs raft over this module's erpc transport; "raft-tcp"
// runs it over hashicorp/raft's NetworkTransport on TCP loopback
// (raft.NewTCPTransport). In both, the client reaches the leader over erpc
// (UDP loopback by default), so only raft's transport differs. With Direct,
// the client hop is skipped: the PUT is raft.Apply on the leader, which
// isolates raft's own commit path.
package raftbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/erpc-go/erpc"
	erpcraft "github.com/erpc-go/erpc/contrib/raft"
	"github.com/erpc-go/erpc/contrib/raft/internal/localnet"
	"github.com/erpc-go/erpc/contrib/raft/kvstore"
	"github.com/hashicorp/raft"
)

// Config describes a run. The zero value is valid: erpc over UDP loopback,
// 1 s warm-up, 5 s measured, 16-byte keys and 64-byte values.
type Config struct {
	Transport string        // "erpc" (default) or "raft-tcp"
	Network   string        // erpc network for replicas and client: "udp" (default), "shm" or "mem"
	Warmup    time.Duration // default 1 s, not measured
	Duration  time.Duration // default 5 s; a run also stops after MaxPuts
	MaxPuts   int           // 0: no limit
	Keys      int           // distinct keys, default 1000
	KeySize   int           // default 16
	ValueSize int           // default 64
	Direct    bool          // Apply on the leader, no client hop
	// Raft adjusts the raft configuration (raft's defaults: 1 s heartbeat
	// and election timeouts, logging off).
	Raft func(*raft.Config)
	// EndpointOptions are passed to every replica endpoint and the client's.
	EndpointOptions []erpc.Option
	// ErpcTransport configures the erpc raft transport (zero: defaults).
	ErpcTransport erpcraft.Config
}

// Result is the latency of the measured PUTs.
type Result struct {
	Transport string
	Count     int
	Errors    int
	P50, P99  time.Duration
	P999, Max time.Duration
	Mean      time.Duration
	// BaseRTT is the p50 of an empty erpc call from the client to the
	// leader's endpoint: the network floor under one replicated PUT.
	BaseRTT time.Duration
	// Latencies are all measured PUT latencies, sorted.
	Latencies []time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("%s: %d PUTs (%d errors) p50 %v p99 %v p99.9 %v max %v mean %v (erpc RTT p50 %v)",
		r.Transport, r.Count, r.Errors, r.P50, r.P99, r.P999, r.Max, r.Mean, r.BaseRTT)
}

func (c *Config) defaults() {
	if c.Transport == "" {
		c.Transport = "erpc"
	}
	if c.Network == "" {
		c.Network = "udp"
	}
	if c.Warmup == 0 {
		c.Warmup = time.Second
	}
	if c.Duration == 0 {
		c.Duration = 5 * time.Second
	}
	if c.Keys <= 0 {
		c.Keys = 1000
	}
	if c.KeySize <= 0 {
		c.KeySize = 16
	}
	if c.ValueSize <= 0 {
		c.ValueSize = 64
	}
}

// Cluster is a started benchmark cluster, for callers that want to issue
// PUTs themselves (BenchmarkPut does).
type Cluster struct {
	cfg    Config
	c      *kvstore.Cluster
	client *kvstore.Client
	leader int
	keys   [][]byte
	value  []byte
	n      int
}

// Start starts the cluster and waits for a leader.
func Start(cfg Config) (*Cluster, error) {
	cfg.defaults()
	ccfg := kvstore.ClusterConfig{
		Network:         cfg.Network,
		RaftTransport:   cfg.Transport,
		EndpointOptions: cfg.EndpointOptions,
		Transport:       cfg.ErpcTransport,
		Raft: func(rc *raft.Config) {
			d := raft.DefaultConfig()
			rc.HeartbeatTimeout, rc.ElectionTimeout = d.HeartbeatTimeout, d.ElectionTimeout
			rc.LeaderLeaseTimeout, rc.CommitTimeout = d.LeaderLeaseTimeout, d.CommitTimeout
			if cfg.Raft != nil {
				cfg.Raft(rc)
			}
		},
	}
	c, err := kvstore.StartCluster(ccfg)
	if err != nil {
		return nil, err
	}
	l, err := c.Leader(10 * time.Second)
	if err != nil {
		c.Close()
		return nil, err
	}
	cl, err := kvstore.NewClient(1, localnet.Client(cfg.Network), c.APIAddrs(), cfg.EndpointOptions...)
	if err != nil {
		c.Close()
		return nil, err
	}
	cl.AttemptTimeout = 2 * time.Second
	b := &Cluster{cfg: cfg, c: c, client: cl, leader: l, value: make([]byte, cfg.ValueSize)}
	for i := range cfg.Keys {
		k := make([]byte, cfg.KeySize)
		copy(k, fmt.Sprintf("key-%d", i))
		b.keys = append(b.keys, k)
	}
	return b, nil
}

// Close stops the cluster.
func (b *Cluster) Close() {
	b.client.Close()
	b.c.Close()
}

// Put issues one PUT and waits for it to be committed and applied.
func (b *Cluster) Put(ctx context.Context) error {
	b.n++
	k := b.keys[b.n%len(b.keys)]
	copy(b.value, fmt.Appendf(b.value[:0], "v%d", b.n))
	if b.cfg.Direct {
		cmd := kvstore.Command{Op: kvstore.OpPut, Key: k, Value: b.value}
		return b.c.Replica(b.leader).Raft.Apply(kvstore.Encode(&cmd), 5*time.Second).Error()
	}
	return b.client.Put(ctx, k, b.value)
}

// baseRTT measures empty erpc calls from a client endpoint to the leader's.
func (b *Cluster) baseRTT(ctx context.Context, n int) (time.Duration, error) {
	ep, err := erpc.Listen(localnet.Client(b.cfg.Network))
	if err != nil {
		return 0, err
	}
	defer ep.Close()
	s, err := ep.Dial(ctx, b.c.APIAddrs()[b.leader])
	if err != nil {
		return 0, err
	}
	var lat []time.Duration
	for range n {
		t0 := time.Now()
		_, err := s.Call(ctx, "raftbench.none", nil, nil) // Unimplemented: a bare round trip
		if erpc.CodeOf(err) != erpc.Unimplemented {
			return 0, err
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	return lat[len(lat)/2], nil
}

// Run starts a cluster, warms up, then issues PUTs one at a time for
// cfg.Duration (or cfg.MaxPuts) and returns their latencies.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	b, err := Start(cfg)
	if err != nil {
		return Result{}, err
	}
	defer b.Close()
	res := Result{Transport: cfg.Transport}
	if cfg.Direct {
		res.Transport += "/direct"
	}
	if res.BaseRTT, err = b.baseRTT(ctx, 2000); err != nil {
		return res, fmt.Errorf("raftbench: base RTT: %w", err)
	}
	warm := time.Now().Add(cfg.Warmup)
	for time.Now().Before(warm) {
		if err := b.Put(ctx); err != nil && ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	end := time.Now().Add(cfg.Duration)
	lat := make([]time.Duration, 0, 1<<16)
	for time.Now().Before(end) && (cfg.MaxPuts == 0 || len(lat) < cfg.MaxPuts) {
		t0 := time.Now()
		err := b.Put(ctx)
		d := time.Since(t0)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			res.Errors++
			continue
		}
		lat = append(lat, d)
	}
	if len(lat) == 0 {
		return res, errors.New("raftbench: no PUT succeeded")
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	res.Count, res.Latencies = len(lat), lat
	res.P50, res.P99, res.P999, res.Max = q(0.50), q(0.99), q(0.999), lat[len(lat)-1]
	res.Mean = sum / time.Duration(len(lat))
	return res, nil
}
