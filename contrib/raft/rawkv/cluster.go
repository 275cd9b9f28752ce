package rawkv

import (
	"context"
	"errors"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/contrib/raft/internal/localnet"
)

// ClusterConfig describes a cluster of replicas in this process.
type ClusterConfig struct {
	Replicas int    // default 3
	Network  string // "udp" (default, loopback), "shm" (same host) or "mem" (memnet.Default)
	// EndpointOptions are given to every replica's endpoint. Give every
	// endpoint of the process the same erpc.WithSpin (see erpc.WithSpin).
	EndpointOptions []erpc.Option
	// Replica adjusts each replica's Config (ID, Peers, Endpoint and
	// Service are set already).
	Replica func(*Config)
}

// Cluster is a set of replicas, each on an endpoint of its own, in this
// process.
type Cluster struct {
	reps  []*Replica
	addrs []string
	net   *localnet.Net
}

// StartCluster opens the endpoints (each serving a Service), then starts
// the replicas; it does not wait for a leader (see Leader).
func StartCluster(cfg ClusterConfig) (*Cluster, error) {
	if cfg.Replicas <= 0 {
		cfg.Replicas = 3
	}
	c := &Cluster{}
	var eps []*erpc.Endpoint
	var svcs []*Service
	fail := func(err error) (*Cluster, error) {
		for _, ep := range eps[len(c.reps):] {
			ep.Close()
		}
		c.Close()
		return nil, err
	}
	net, err := localnet.New(cfg.Network, "rawkv")
	if err != nil {
		return nil, err
	}
	c.net = net
	for i := range cfg.Replicas {
		listen := net.Listen(i + 1)
		srv := erpc.NewServer()
		svc, err := Register(srv)
		if err != nil {
			return fail(err)
		}
		ep, err := srv.Listen(listen, cfg.EndpointOptions...)
		if err != nil {
			return fail(err)
		}
		eps, svcs = append(eps, ep), append(svcs, svc)
		c.addrs = append(c.addrs, localnet.Dialable(listen, ep))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, ep := range eps {
		rc := Config{ID: uint64(i + 1), Peers: c.addrs, Endpoint: ep, Service: svcs[i]}
		if cfg.Replica != nil {
			cfg.Replica(&rc)
		}
		r, err := StartReplica(ctx, rc)
		if err != nil {
			return fail(err)
		}
		c.reps = append(c.reps, r)
	}
	return c, nil
}

// Replica is replica i (ID i+1).
func (c *Cluster) Replica(i int) *Replica { return c.reps[i] }

// Addrs are the replicas' addresses, by index.
func (c *Cluster) Addrs() []string { return c.addrs }

// Leader waits until an open replica leads with a majority of the open
// replicas agreeing, and returns its index.
func (c *Cluster) Leader(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		for i, r := range c.reps {
			if r.closed.Load() || r.Leader() != r.id {
				continue
			}
			agree := 0
			for _, o := range c.reps {
				if !o.closed.Load() && o.Leader() == r.id {
					agree++
				}
			}
			if 2*agree > len(c.reps) {
				return i, nil
			}
		}
		if time.Now().After(deadline) {
			return -1, errors.New("rawkv: no leader")
		}
		time.Sleep(time.Millisecond)
	}
}

// Close closes every replica.
func (c *Cluster) Close() {
	for _, r := range c.reps {
		r.Close()
	}
	if c.net != nil {
		c.net.Close()
	}
}
