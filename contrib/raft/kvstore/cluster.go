package kvstore

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/erpc-go/erpc"
	erpcraft "github.com/erpc-go/erpc/contrib/raft"
	"github.com/erpc-go/erpc/contrib/raft/internal/localnet"
	"github.com/erpc-go/erpc/internal/faults"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// ClusterConfig describes an in-process cluster: every replica runs in this
// process, each with its own erpc endpoint (event loop), talking over UDP
// loopback or memnet; with RaftTransport "raft-tcp", raft itself runs over
// hashicorp's NetworkTransport on TCP loopback instead, and only the
// client API uses erpc.
type ClusterConfig struct {
	N             int    // replicas, default 3
	Network       string // "udp" (default, loopback), "shm" (same host) or "mem"
	RaftTransport string // "erpc" (default) or "raft-tcp"
	// Raft adjusts the raft configuration, which starts from FastConfig.
	Raft func(*raft.Config)
	// Transport is the template for each replica's erpc raft transport
	// (Drop and Advertise are set by the cluster).
	Transport erpcraft.Config
	// EndpointOptions are passed to every replica endpoint.
	EndpointOptions []erpc.Option
	// PacketLoss makes every replica endpoint drop each datagram it sends
	// with this probability (erpc's fault injection; erpc retransmits).
	PacketLoss float64
	StaleReads bool
	// SnapshotStore makes each replica's snapshot store; default in memory.
	SnapshotStore func() raft.SnapshotStore
}

// FastConfig is a raft configuration with short timeouts, for tests and
// in-process clusters, with raft's logging off unless KV_RAFT_LOG names a level.
func FastConfig() *raft.Config {
	c := raft.DefaultConfig()
	c.HeartbeatTimeout = 100 * time.Millisecond
	c.ElectionTimeout = 100 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	level := hclog.Off
	if l := os.Getenv("KV_RAFT_LOG"); l != "" { // e.g. KV_RAFT_LOG=debug
		level = hclog.LevelFromString(l)
	}
	c.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: level, Output: os.Stderr})
	return c
}

// node is what a replica keeps across restarts.
type node struct {
	id       raft.ServerID
	raftAddr raft.ServerAddress
	apiAddr  string
	listen   string // for the erpc transport: the address to listen on
	logs     *raft.InmemStore
	snaps    raft.SnapshotStore
	fsm      *FSM
	trans    raft.Transport
	ep       *erpc.Endpoint // serves the client API (and raft's RPCs, over erpc)
	svc      *Service
	replica  *Replica
}

// Cluster is a running in-process cluster.
type Cluster struct {
	cfg    ClusterConfig
	net    *localnet.Net
	nodes  []*node
	Faults *Faults
	mu     sync.Mutex
}

// StartCluster starts the replicas and bootstraps them as one cluster.
func StartCluster(cfg ClusterConfig) (*Cluster, error) {
	if cfg.N == 0 {
		cfg.N = 3
	}
	if cfg.Network == "" {
		cfg.Network = "udp"
	}
	if cfg.RaftTransport == "" {
		cfg.RaftTransport = "erpc"
	}
	if cfg.SnapshotStore == nil {
		cfg.SnapshotStore = func() raft.SnapshotStore { return raft.NewInmemSnapshotStore() }
	}
	net, err := localnet.New(cfg.Network, "kvstore")
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, net: net, Faults: NewFaults()}
	for i := range cfg.N {
		n := &node{id: raft.ServerID(fmt.Sprintf("r%d", i)), logs: raft.NewInmemStore(), snaps: cfg.SnapshotStore(), fsm: NewFSM()}
		n.listen = net.Listen(i)
		c.nodes = append(c.nodes, n)
		if err := c.openTransport(n); err != nil {
			c.Close()
			return nil, err
		}
	}
	var servers []raft.Server
	for _, n := range c.nodes {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: n.id, Address: n.raftAddr})
	}
	for _, n := range c.nodes {
		rc := c.raftConfig(n)
		if err := raft.BootstrapCluster(rc, n.logs, n.logs, n.snaps, n.trans, raft.Configuration{Servers: servers}); err != nil {
			c.Close()
			return nil, err
		}
	}
	for i := range c.nodes {
		if err := c.startReplica(i); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *Cluster) raftConfig(n *node) *raft.Config {
	rc := FastConfig()
	if c.cfg.Raft != nil {
		c.cfg.Raft(rc)
	}
	rc.LocalID = n.id
	return rc
}

// openTransport gives n a fresh transport and API endpoint, on the same
// addresses as before if it had them. Every method is registered before
// the endpoint serves; the replica comes later (startReplica).
func (c *Cluster) openTransport(n *node) error {
	srv := erpc.NewServer()
	switch c.cfg.RaftTransport {
	case "erpc":
		tc := c.cfg.Transport
		// The address peers know this replica by: its name, or after the
		// first start, what it had then.
		tc.Advertise = localnet.Advertise(n.listen)
		if n.raftAddr != "" {
			tc.Advertise = string(n.raftAddr)
		}
		// n.raftAddr is set below, before raft starts any RPC.
		tc.Drop = func(to raft.ServerAddress) bool { return c.Faults.Cut(n.raftAddr, to) }
		t, err := erpcraft.Register(srv, tc)
		if err != nil {
			return err
		}
		svc, err := Register(srv)
		if err != nil {
			return err
		}
		// The transport template's endpoint options, then the cluster's.
		ep, err := c.listen(srv, n.listen, tc.EndpointOptions...)
		if err != nil {
			return err
		}
		if err := t.Start(ep); err != nil {
			ep.Close()
			return err
		}
		if n.raftAddr == "" { // set once: the addresses are read without locks
			n.raftAddr = t.LocalAddr()
			n.apiAddr = string(t.LocalAddr())
			n.listen = string(t.LocalAddr())
		}
		n.trans, n.ep, n.svc = t, ep, svc
	case "raft-tcp":
		bind := "127.0.0.1:0"
		if n.raftAddr != "" {
			bind = string(n.raftAddr)
		}
		svc, err := Register(srv)
		if err != nil {
			return err
		}
		t, err := raft.NewTCPTransport(bind, nil, 3, 10*time.Second, io.Discard)
		if err != nil {
			return err
		}
		if n.raftAddr == "" {
			n.raftAddr = t.LocalAddr()
		}
		listen := "127.0.0.1:0"
		if c.cfg.Network == "shm" {
			listen = n.listen
		}
		if n.apiAddr != "" {
			listen = n.apiAddr
		}
		ep, err := c.listen(srv, listen)
		if err != nil {
			t.Close()
			return err
		}
		n.trans, n.ep, n.svc = t, ep, svc
		if n.apiAddr == "" {
			n.apiAddr = localnet.Dialable(listen, ep)
		}
	default:
		return fmt.Errorf("kvstore: unknown raft transport %q", c.cfg.RaftTransport)
	}
	return nil
}

// listen opens a replica endpoint serving srv on addr, with opts and the
// cluster's EndpointOptions, losing packets if the cluster is configured to.
func (c *Cluster) listen(srv *erpc.Server, addr string, opts ...erpc.Option) (*erpc.Endpoint, error) {
	opts = append(slices.Clip(opts), c.cfg.EndpointOptions...)
	if c.cfg.PacketLoss > 0 {
		tr, err := faults.Listen(addr, c.cfg.PacketLoss, rand.Uint64())
		if err != nil {
			return nil, err
		}
		opts = append(slices.Clip(opts), erpc.WithTransport(tr))
	}
	return srv.Listen(addr, opts...)
}

func (c *Cluster) apiAddr(id raft.ServerID) string {
	for _, n := range c.nodes {
		if n.id == id {
			return n.apiAddr
		}
	}
	return ""
}

func (c *Cluster) startReplica(i int) error {
	n := c.nodes[i]
	rp, err := StartReplica(ReplicaConfig{
		ID: n.id, Raft: c.raftConfig(n), FSM: n.fsm, Logs: n.logs, Stable: n.logs, Snaps: n.snaps,
		Transport: n.trans, Service: n.svc, APIAddr: c.apiAddr, StaleReads: c.cfg.StaleReads,
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	n.replica = rp
	c.mu.Unlock()
	return nil
}

// Replica returns replica i (nil while it is stopped).
func (c *Cluster) Replica(i int) *Replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].replica
}

// N is the number of replicas.
func (c *Cluster) N() int { return len(c.nodes) }

// APIAddrs are the addresses clients dial.
func (c *Cluster) APIAddrs() []string {
	var a []string
	for _, n := range c.nodes {
		a = append(a, n.apiAddr)
	}
	return a
}

// RaftAddr is replica i's raft address.
func (c *Cluster) RaftAddr(i int) raft.ServerAddress { return c.nodes[i].raftAddr }

// Leader waits until some running replica that is not cut off from the
// majority is leader, and returns its index.
func (c *Cluster) Leader(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		for i := range c.nodes {
			rp := c.Replica(i)
			if rp != nil && rp.Raft.State() == raft.Leader && !c.Faults.Isolated(c.nodes[i].raftAddr) {
				return i, nil
			}
		}
		if time.Now().After(deadline) {
			return -1, errors.New("kvstore: no leader")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Stop shuts replica i down and closes its transport; its stores and FSM
// stay, as on a machine that crashed with its disk intact.
func (c *Cluster) Stop(i int) error {
	n := c.nodes[i]
	c.mu.Lock()
	rp := n.replica
	n.replica = nil
	c.mu.Unlock()
	if rp == nil {
		return nil
	}
	err := rp.Raft.Shutdown().Error()
	if cl, ok := n.trans.(raft.WithClose); ok {
		cl.Close()
	}
	if n.ep != nil {
		n.ep.Close()
	}
	return err
}

// Restart stops replica i and starts it again with the same stores and a
// fresh transport on the same address. The FSM starts empty: raft restores
// it from the snapshot and the log.
func (c *Cluster) Restart(i int) error {
	if err := c.Stop(i); err != nil {
		return err
	}
	n := c.nodes[i]
	n.fsm = NewFSM()
	var err error
	for range 50 { // the address may take a moment to free
		if err = c.openTransport(n); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	return c.startReplica(i)
}

// Close stops every replica.
func (c *Cluster) Close() {
	defer c.net.Close()
	for i, n := range c.nodes {
		if c.Replica(i) != nil {
			c.Stop(i)
		} else if n.trans != nil {
			if cl, ok := n.trans.(raft.WithClose); ok {
				cl.Close()
			}
			if n.ep != nil {
				n.ep.Close()
			}
		}
	}
}

// Faults is a table of cut links, consulted by every replica's transport
// (erpcraft.Config.Drop) before each RPC.
type Faults struct {
	mu  sync.Mutex
	cut map[[2]raft.ServerAddress]bool
	iso map[raft.ServerAddress]bool
}

// NewFaults returns a table with every link up.
func NewFaults() *Faults {
	return &Faults{cut: make(map[[2]raft.ServerAddress]bool), iso: make(map[raft.ServerAddress]bool)}
}

// Cut reports whether from -> to is down.
func (f *Faults) Cut(from, to raft.ServerAddress) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.iso[from] || f.iso[to] || f.cut[[2]raft.ServerAddress{from, to}]
}

// Isolate cuts every raft link of addr, both ways.
func (f *Faults) Isolate(addr raft.ServerAddress) {
	f.mu.Lock()
	f.iso[addr] = true
	f.mu.Unlock()
}

// Isolated reports whether addr is isolated.
func (f *Faults) Isolated(addr raft.ServerAddress) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.iso[addr]
}

// SetLink cuts or restores from -> to.
func (f *Faults) SetLink(from, to raft.ServerAddress, down bool) {
	f.mu.Lock()
	f.cut[[2]raft.ServerAddress{from, to}] = down
	f.mu.Unlock()
}

// Heal restores every link.
func (f *Faults) Heal() {
	f.mu.Lock()
	clear(f.cut)
	clear(f.iso)
	f.mu.Unlock()
}
