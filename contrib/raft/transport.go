package raft

import (
	"errors"
	"fmt"
	"slices"
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
	// Default: for New, the listen address, or the bound address for port
	// 0; for Register and Start, the endpoint's Target.
	Advertise string
	// Drop, when set, is asked before every outgoing RPC; true fails it at
	// once with ErrDropped. It is the fault-injection hook the tests use
	// for partitions. Never set it in production.
	Drop func(target raft.ServerAddress) bool
	// EndpointOptions are passed to the endpoint New opens (Register and
	// Start leave the endpoint to the caller).
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
	cfg     Config
	ownsEP  bool // New made the endpoint: Close closes it
	att     atomic.Pointer[attachment]
	lifeMu  sync.Mutex // orders Start and Close
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

// attachment is what Start gives a registered transport: the endpoint and
// the address peers dial.
type attachment struct {
	ep    *erpc.Endpoint
	local raft.ServerAddress
}

var (
	_ raft.Transport   = (*Transport)(nil)
	_ raft.WithPreVote = (*Transport)(nil)
	_ raft.WithClose   = (*Transport)(nil)
)

// New listens on addr ("127.0.0.1:0", "mem://node1", ...) with an erpc
// server of its own and returns a started transport that owns the
// endpoint. An address other hosts can reach ("0.0.0.0:7000", a node's
// own address) needs erpc.WithTLS or erpc.Insecure in
// cfg.EndpointOptions, as erpc.Server.Listen does. Use Register and Start instead to serve other methods on the
// same endpoint.
func New(addr string, cfg Config) (*Transport, error) {
	srv := erpc.NewServer()
	t, err := Register(srv, cfg)
	if err != nil {
		return nil, err
	}
	ep, err := srv.Listen(addr, cfg.EndpointOptions...)
	if err != nil {
		return nil, err
	}
	if t.cfg.Advertise == "" {
		t.cfg.Advertise = advertise(addr, ep)
	}
	t.ownsEP = true
	if err := t.Start(ep); err != nil {
		ep.Close()
		return nil, err
	}
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

// methods are the erpc methods Register adds to a server.
var methods = []string{methodAppendEntries, methodHeartbeat, methodRequestVote, methodPreVote, methodTimeoutNow, methodSnapshot}

// Register adds raft's methods to srv, which must not serve yet, and
// returns a transport that is not started: until Start gives it the
// endpoint that srv.Listen opened, it answers its peers' RPCs with
// Unavailable (raft retries them) and fails its own with ErrNotStarted.
// The endpoint stays the caller's: Close does not close it.
//
//	srv := erpc.NewServer()
//	t, err := erpcraft.Register(srv, cfg)
//	// ... the node's other methods, on srv too
//	ep, err := srv.Listen(addr)
//	err = t.Start(ep)
//	r, err := raft.NewRaft(rc, fsm, logs, stable, snaps, t)
func Register(srv *erpc.Server, cfg Config) (*Transport, error) {
	if srv == nil {
		return nil, errors.New("erpc/raft: Register on a nil server")
	}
	cfg.defaults()
	// All six or none: a name already taken fails before any is added.
	for _, have := range srv.Methods() {
		if slices.Contains(methods, have) {
			return nil, fmt.Errorf("erpc/raft: the server already has method %q (one transport per server)", have)
		}
	}
	t := &Transport{
		cfg:       cfg,
		peers:     make(map[raft.ServerAddress]*peer),
		consumeCh: make(chan raft.RPC, cfg.QueueDepth),
		pending:   make(chan *pendingRPC, cfg.QueueDepth+1),
		hbCh:      make(chan *hbRPC, 64),
		streams:   make(map[uint64]*snapStream),
		shutdown:  make(chan struct{}),
	}
	// The handlers that hand requests to raft are OnLoop: none blocks, and
	// an inline handler that erpc hands off (one the scheduler preempted
	// past the handoff threshold, say) would finish beside the loop's next
	// handlers and queue its request after theirs, so raft would see one
	// session's AppendEntries out of the order they arrived in. The
	// snapshot handler is not: its chunk hand-over takes a lock that
	// raft's reader holds while it answers a chunk, and chunks come one at
	// a time anyway.
	onLoop := []erpc.HandlerOption{erpc.OnLoop()}
	for _, m := range []struct {
		name string
		fn   func(erpc.Request)
		opts []erpc.HandlerOption
	}{
		{methodAppendEntries, t.serveAppendEntries, onLoop},
		{methodHeartbeat, t.serveHeartbeat, onLoop},
		{methodRequestVote, t.serveRequestVote, onLoop},
		{methodPreVote, t.servePreVote, onLoop},
		{methodTimeoutNow, t.serveTimeoutNow, onLoop},
		{methodSnapshot, t.serveSnapshot, nil},
	} {
		if err := srv.HandleRaw(m.name, m.fn, m.opts...); err != nil {
			return nil, fmt.Errorf("erpc/raft: %w", err)
		}
	}
	return t, nil
}

// ErrNotStarted is returned by the RPCs of a transport that Register made
// and Start has not started yet.
var ErrNotStarted = errors.New("erpc/raft: transport not started (Register, srv.Listen, then Start)")

// Start starts a transport that Register made, on ep: the endpoint that
// Listen of the server given to Register opened. From then on the
// transport serves its peers' RPCs and makes its own; give it to raft
// after Start. LocalAddr becomes Config.Advertise or, if that is empty,
// ep.Target(); set Advertise when peers should dial something else (a
// name, for an endpoint opened with erpc.WithTransport on memnet; a
// routable address, for a wildcard UDP address). Start fails on a
// transport that was started or closed before.
func (t *Transport) Start(ep *erpc.Endpoint) error {
	if ep == nil {
		return errors.New("erpc/raft: Start with a nil endpoint")
	}
	t.lifeMu.Lock()
	defer t.lifeMu.Unlock()
	switch {
	case t.closed():
		return ErrTransportShutdown
	case t.att.Load() != nil:
		return errors.New("erpc/raft: transport already started")
	}
	local := t.cfg.Advertise
	if local == "" {
		local = ep.Target()
	}
	if local == "" {
		return errors.New("erpc/raft: the endpoint cannot be dialed (a client-only shm endpoint?): set Config.Advertise")
	}
	t.wg.Add(2)
	go t.respondLoop()
	go t.heartbeatLoop()
	t.att.Store(&attachment{ep: ep, local: raft.ServerAddress(local)})
	return nil
}

// Endpoint is the erpc endpoint the transport runs on; nil before Start.
func (t *Transport) Endpoint() *erpc.Endpoint {
	if a := t.att.Load(); a != nil {
		return a.ep
	}
	return nil
}

// Consumer returns the channel of incoming RPCs for raft's main loop.
func (t *Transport) Consumer() <-chan raft.RPC { return t.consumeCh }

// LocalAddr is the address peers dial to reach this node. Before Start it
// is Config.Advertise, which may be empty.
func (t *Transport) LocalAddr() raft.ServerAddress {
	if a := t.att.Load(); a != nil {
		return a.local
	}
	return raft.ServerAddress(t.cfg.Advertise)
}

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
		t.lifeMu.Lock()
		close(t.shutdown)
		t.lifeMu.Unlock()
		t.peersMu.Lock()
		peers := t.peers
		t.peers = nil
		t.peersMu.Unlock()
		for _, p := range peers {
			p.close()
		}
		if a := t.att.Load(); a != nil && t.ownsEP {
			err = a.ep.Close()
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
