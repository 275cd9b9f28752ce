package raft

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/hashicorp/raft"
)

// Method names on the wire. Heartbeats have their own method so the server
// can route them to raft's heartbeat handler without touching the queue
// that raft's main loop (and the follower's disk) drains.
const (
	methodAppendEntries = "raft.AppendEntries"
	methodHeartbeat     = "raft.Heartbeat"
	methodRequestVote   = "raft.RequestVote"
	methodPreVote       = "raft.RequestPreVote"
	methodTimeoutNow    = "raft.TimeoutNow"
	methodSnapshot      = "raft.InstallSnapshot"
)

// Errors the transport returns.
var (
	// ErrTransportShutdown is returned by calls on a closed transport.
	ErrTransportShutdown = errors.New("erpc/raft: transport shutdown")
	// ErrDropped is returned when Config.Drop refused to send (fault
	// injection in tests).
	ErrDropped = errors.New("erpc/raft: dropped by fault injection")
)

// Config tunes a Transport. The zero value gives the defaults.
type Config struct {
	// Timeout bounds a synchronous RPC (AppendEntries, votes, TimeoutNow),
	// dialing included, and the wait for each snapshot chunk. Default 2 s.
	Timeout time.Duration
	// HeartbeatTimeout bounds a heartbeat: short, so that a dead follower
	// costs the leader little and a slow one is noticed. Default 500 ms.
	HeartbeatTimeout time.Duration
	// MaxInFlight is the depth of an AppendEntries pipeline; 1 or less than
	// zero disables pipelining. Default 4 (at most erpc's session window).
	MaxInFlight int
	// SnapshotChunkSize is the size of one InstallSnapshot message.
	// Default 1 MiB (erpc messages are at most 8 MiB by default).
	SnapshotChunkSize int
	// SnapshotBytesPerTimeout scales the snapshot timeout: a snapshot of
	// Size bytes gets Timeout * (1 + Size/SnapshotBytesPerTimeout) in all.
	// Default 256 KiB, as raft's NetworkTransport does.
	SnapshotBytesPerTimeout int64
	// QueueDepth bounds the RPCs waiting for raft's main loop; one that
	// finds it full is refused with ResourceExhausted (raft backs off and
	// retries) instead of blocking the endpoint's event loop. Default 256.
	QueueDepth int
	// Advertise is the address peers use to reach this node (LocalAddr).
	// Default: the listen address, or the bound address for port 0.
	Advertise string
	// Drop, when set, is asked before every outgoing RPC; true fails it at
	// once with ErrDropped. It is the fault-injection hook the tests use
	// for partitions. Never set it in production.
	Drop func(target raft.ServerAddress) bool
	// EndpointOptions are passed to erpc.Listen by New.
	EndpointOptions []erpc.Option
}

func (c *Config) defaults() {
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Second
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 500 * time.Millisecond
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 4
	}
	if c.SnapshotChunkSize <= 0 {
		c.SnapshotChunkSize = 1 << 20
	}
	if c.SnapshotBytesPerTimeout <= 0 {
		c.SnapshotBytesPerTimeout = 256 << 10
	}
	if c.QueueDepth <= 0 {
		c.QueueDepth = 256
	}
}

// Transport is a raft.Transport over one erpc endpoint, which both serves
// the peers' RPCs and carries this node's calls to them. It also implements
// raft.WithPreVote and raft.WithClose.
type Transport struct {
	ep      *erpc.Endpoint
	ownsEP  bool
	local   raft.ServerAddress
	cfg     Config
	peersMu sync.Mutex
	peers   map[raft.ServerAddress]*peer

	// Server side: see server.go.
	dispatchMu sync.Mutex
	consumeCh  chan raft.RPC
	pending    chan *pendingRPC
	hbCh       chan *hbRPC
	hbHandler  atomic.Pointer[func(raft.RPC)]
	streamsMu  sync.Mutex
	streams    map[uint64]*snapStream

	shutdown  chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

var (
	_ raft.Transport   = (*Transport)(nil)
	_ raft.WithPreVote = (*Transport)(nil)
	_ raft.WithClose   = (*Transport)(nil)
)

// New listens on addr ("127.0.0.1:0", "mem://node1", ...) and returns a
// transport that owns the endpoint.
func New(addr string, cfg Config) (*Transport, error) {
	ep, err := erpc.Listen(addr, cfg.EndpointOptions...)
	if err != nil {
		return nil, err
	}
	if cfg.Advertise == "" {
		cfg.Advertise = advertise(addr, ep)
	}
	t, err := NewWithEndpoint(ep, cfg)
	if err != nil {
		ep.Close()
		return nil, err
	}
	t.ownsEP = true
	return t, nil
}

// advertise picks the dialable form of a listen address: named memnet and
// shm addresses as given, otherwise the bound address (port 0 resolved),
// with the scheme kept.
func advertise(addr string, ep *erpc.Endpoint) string {
	scheme, rest, found := strings.Cut(addr, "://")
	if found && scheme != "udp" {
		return addr
	}
	if !found {
		rest = addr
	}
	bound := ep.Addr()
	if strings.HasSuffix(rest, ":0") || strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "0.0.0.0:") {
		if found {
			return "udp://" + bound.String()
		}
		return bound.String()
	}
	return addr
}

// NewWithEndpoint serves raft on an existing endpoint (which may carry other
// methods too, as the raftkv example's client API does). cfg.Advertise must
// be set to the address peers dial. The endpoint stays the caller's: Close
// does not close it.
func NewWithEndpoint(ep *erpc.Endpoint, cfg Config) (*Transport, error) {
	cfg.defaults()
	if cfg.Advertise == "" {
		return nil, errors.New("erpc/raft: Config.Advertise is required with NewWithEndpoint")
	}
	t := &Transport{
		ep:        ep,
		local:     raft.ServerAddress(cfg.Advertise),
		cfg:       cfg,
		peers:     make(map[raft.ServerAddress]*peer),
		consumeCh: make(chan raft.RPC, cfg.QueueDepth),
		pending:   make(chan *pendingRPC, cfg.QueueDepth+1),
		hbCh:      make(chan *hbRPC, 64),
		streams:   make(map[uint64]*snapStream),
		shutdown:  make(chan struct{}),
	}
	for _, m := range []struct {
		name string
		fn   func(*erpc.Request)
	}{
		{methodAppendEntries, t.serveAppendEntries},
		{methodHeartbeat, t.serveHeartbeat},
		{methodRequestVote, t.serveRequestVote},
		{methodPreVote, t.servePreVote},
		{methodTimeoutNow, t.serveTimeoutNow},
		{methodSnapshot, t.serveSnapshot},
	} {
		if err := ep.HandleRaw(m.name, m.fn); err != nil {
			return nil, fmt.Errorf("erpc/raft: %w", err)
		}
	}
	t.wg.Add(2)
	go t.respondLoop()
	go t.heartbeatLoop()
	return t, nil
}

// Endpoint is the erpc endpoint the transport runs on.
func (t *Transport) Endpoint() *erpc.Endpoint { return t.ep }

// Consumer returns the channel of incoming RPCs for raft's main loop.
func (t *Transport) Consumer() <-chan raft.RPC { return t.consumeCh }

// LocalAddr is the address peers dial to reach this node.
func (t *Transport) LocalAddr() raft.ServerAddress { return t.local }

// EncodePeer stores the address itself: it is already the erpc target.
func (t *Transport) EncodePeer(_ raft.ServerID, addr raft.ServerAddress) []byte {
	return []byte(addr)
}

// DecodePeer is the inverse of EncodePeer.
func (t *Transport) DecodePeer(b []byte) raft.ServerAddress { return raft.ServerAddress(b) }

// SetHeartbeatHandler installs raft's fast path for heartbeats: they are
// handled on the transport's heartbeat goroutine, never queued behind
// entries or snapshots for the main loop.
func (t *Transport) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	if cb == nil {
		t.hbHandler.Store(nil)
		return
	}
	t.hbHandler.Store(&cb)
}

// Close stops the transport: calls in flight fail, RPCs not yet answered
// are abandoned, and every goroutine of the transport (and of its endpoint,
// when New made it) has exited when Close returns. It is safe to call more
// than once.
func (t *Transport) Close() error {
	var err error
	t.closeOnce.Do(func() {
		close(t.shutdown)
		t.peersMu.Lock()
		peers := t.peers
		t.peers = nil
		t.peersMu.Unlock()
		for _, p := range peers {
			p.close()
		}
		if t.ownsEP {
			err = t.ep.Close()
		}
		t.wg.Wait()
	})
	return err
}

func (t *Transport) closed() bool {
	select {
	case <-t.shutdown:
		return true
	default:
		return false
	}
}
