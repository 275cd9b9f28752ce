package rawkv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/erpc-go/erpc"
)

// ClusterConfig describes a cluster of replicas in this process.
type ClusterConfig struct {
	Replicas int    // default 3
	Network  string // "udp" (default, loopback), "shm" (same host) or "mem" (memnet.Default)
	// EndpointOptions are given to every replica's endpoint. Give every
	// endpoint of the process the same erpc.WithSpin (see erpc.WithSpin).
	EndpointOptions []erpc.Option
	// Replica adjusts each replica's Config (ID, Peers and Endpoint are
	// set already).
	Replica func(*Config)
}

// Cluster is a set of replicas, each on an endpoint of its own, in this
// process.
type Cluster struct {
	reps  []*Replica
	addrs []string
	dir   string // shm: the directory of the replicas' sockets
}

// StartCluster opens the endpoints, then starts the replicas; it does not
// wait for a leader (see Leader).
func StartCluster(cfg ClusterConfig) (*Cluster, error) {
	if cfg.Replicas <= 0 {
		cfg.Replicas = 3
	}
	c := &Cluster{}
	var eps []*erpc.Endpoint
	fail := func(err error) (*Cluster, error) {
		for _, ep := range eps[len(c.reps):] {
			ep.Close()
		}
		c.Close()
		return nil, err
	}
	tag := rand.Uint32()
	if cfg.Network == "shm" {
		dir, err := os.MkdirTemp("", "rawkv-shm-")
		if err != nil {
			return nil, err
		}
		c.dir = dir
	}
	for i := range cfg.Replicas {
		addr := "127.0.0.1:0"
		switch cfg.Network {
		case "", "udp":
		case "mem":
			addr = fmt.Sprintf("mem://rawkv-%08x-%d", tag, i+1)
		case "shm":
			addr = "shm://" + filepath.Join(c.dir, fmt.Sprintf("r%d.sock", i+1))
		default:
			return fail(fmt.Errorf("rawkv: unknown network %q", cfg.Network))
		}
		ep, err := erpc.Listen(addr, cfg.EndpointOptions...)
		if err != nil {
			return fail(err)
		}
		eps = append(eps, ep)
		if strings.HasPrefix(addr, "127.0.0.1:") {
			addr = ep.Addr().String() // the port picked
		}
		c.addrs = append(c.addrs, addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, ep := range eps {
		rc := Config{ID: uint64(i + 1), Peers: c.addrs, Endpoint: ep}
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
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
}
