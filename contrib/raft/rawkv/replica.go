package rawkv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// peer is another replica, as this one sends to it.
type peer struct {
	id       uint64
	addr     string
	sess     *erpc.Session
	out      []byte // messages batched for it during one Ready
	hasSnap  bool   // out carries a MsgSnap
	inflight int    // batches sent and not yet answered
}

// pending is a command proposed on this replica whose answer waits for it
// to be applied: a client's request, or a local proposal's callback.
type pending struct {
	seq  uint64
	req  erpc.Request        // a client's request, or
	done func(result []byte) // a local proposal's callback
}

// answer answers the client (Respond copies b) or calls back.
func (p pending) answer(b []byte) {
	if p.done != nil {
		p.done(b)
		return
	}
	p.req.Respond(b)
}

// Replica is one member of the replicated store. All of its state below
// the line is owned by its endpoint's event loop.
type Replica struct {
	cfg  Config
	id   uint64
	ep   *erpc.Endpoint
	tick func()

	leader  atomic.Uint64 // raft's leader as last seen, for other goroutines
	applied atomic.Uint64 // applied index, for other goroutines
	closed  atomic.Bool
	stop    chan struct{}
	ticker  sync.WaitGroup

	// ---- owned by the event loop ----
	rn        *raft.RawNode
	st        *raft.MemoryStorage
	peers     map[uint64]*peer
	kv        map[string][]byte
	sessions  map[uint64]session
	pending   map[uint64]pending // by client ID: a client runs one command at a time
	isLeader  bool
	lead      uint64
	appliedIx uint64
	snapIx    uint64
	confState *pb.ConfState
	localSeq  uint64
	// While a raft.msg handler runs, messages to its sender go into reply,
	// the handler's response, instead of calls of their own.
	replyTo uint64
	reply   []byte
	inReply bool
	reports []func() // raft notifications held until after Advance
}

var discard = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

// StartReplica starts a replica on cfg.Endpoint and attaches it to
// cfg.Service, which then serves with it. The other replicas' endpoints
// must be listening (it dials them); they may start their replicas later.
// A Service takes one replica.
func StartReplica(ctx context.Context, cfg Config) (*Replica, error) {
	cfg.defaults()
	if cfg.ID < 1 || cfg.ID > uint64(len(cfg.Peers)) || cfg.Endpoint == nil || cfg.Service == nil {
		return nil, errors.New("rawkv: Config needs an Endpoint, a Service (rawkv.Register) and an ID in 1..len(Peers)")
	}
	if cfg.Service.r.Load() != nil {
		return nil, errors.New("rawkv: the service has a replica already")
	}
	r := &Replica{cfg: cfg, id: cfg.ID, ep: cfg.Endpoint, stop: make(chan struct{}),
		st: raft.NewMemoryStorage(), peers: make(map[uint64]*peer), kv: make(map[string][]byte),
		sessions: make(map[uint64]session), pending: make(map[uint64]pending)}
	r.tick = r.onTick
	voters := make([]uint64, len(cfg.Peers))
	for i := range cfg.Peers {
		voters[i] = uint64(i + 1)
	}
	// A fresh cluster: every replica starts from the same configuration,
	// set as the storage's snapshot (index 0), as etcd recommends instead
	// of Bootstrap's conf-change entries.
	r.confState = &pb.ConfState{Voters: voters}
	if err := r.st.ApplySnapshot(&pb.Snapshot{Metadata: &pb.SnapshotMetadata{ConfState: r.confState}}); err != nil {
		return nil, err
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID:              cfg.ID,
		ElectionTick:    cfg.ElectionTick,
		HeartbeatTick:   cfg.HeartbeatTick,
		Storage:         r.st,
		MaxSizePerMsg:   256 << 10,
		MaxInflightMsgs: 256,
		CheckQuorum:     true,
		PreVote:         true,
		Logger:          discard,
	})
	if err != nil {
		return nil, err
	}
	r.rn = rn
	// Sessions first, then the service: a message that arrives finds every
	// session in place, and nothing else writes r.peers.
	for i, addr := range cfg.Peers {
		id := uint64(i + 1)
		if id == cfg.ID {
			continue
		}
		s, err := cfg.Endpoint.Dial(ctx, addr)
		if err != nil {
			r.closeSessions()
			return nil, fmt.Errorf("rawkv: dial replica %d at %s: %w", id, addr, err)
		}
		r.peers[id] = &peer{id: id, addr: addr, sess: s}
	}
	if !cfg.Service.r.CompareAndSwap(nil, r) {
		r.closeSessions()
		return nil, errors.New("rawkv: the service has a replica already")
	}
	r.ticker.Add(1)
	go r.runTicker()
	return r, nil
}

// closeSessions closes the sessions of a replica that failed to start.
func (r *Replica) closeSessions() {
	for _, p := range r.peers {
		p.sess.Close()
	}
}

// runTicker hands raft a tick every TickInterval, on the loop.
func (r *Replica) runTicker() {
	defer r.ticker.Done()
	t := time.NewTicker(r.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if r.ep.Post(r.tick) != nil {
				return
			}
		case <-r.stop:
			return
		}
	}
}

// Close stops the replica and closes its endpoint; requests waiting on it
// are abandoned (their clients time out and go elsewhere).
func (r *Replica) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	close(r.stop)
	r.ticker.Wait()
	return r.ep.Close()
}

// ID is the replica's raft ID.
func (r *Replica) ID() uint64 { return r.id }

// Addr is the replica's address.
func (r *Replica) Addr() string { return r.cfg.Peers[r.id-1] }

// Leader is the ID of the leader as this replica last knew it (0: none).
func (r *Replica) Leader() uint64 { return r.leader.Load() }

// Applied is the index of the last log entry applied to the store.
func (r *Replica) Applied() uint64 { return r.applied.Load() }

// Dump returns a copy of the store, taken on the loop.
func (r *Replica) Dump() (map[string][]byte, error) {
	ch := make(chan map[string][]byte, 1)
	if err := r.ep.Post(func() { ch <- maps.Clone(r.kv) }); err != nil {
		return nil, err
	}
	return <-ch, nil
}

// Propose puts key=value through raft from this replica's loop, without a
// client hop, and calls done (on the loop) with nil once it is applied on
// this replica, or with an error if this replica does not lead or raft
// drops the proposal. It measures the commit path alone.
func (r *Replica) Propose(key, value []byte, done func(error)) error {
	key, value = slices.Clone(key), slices.Clone(value)
	return r.ep.Post(func() {
		if !r.isLeader {
			done(ErrNotLeader)
			return
		}
		r.localSeq++
		c := command{op: OpPut, client: localClient | r.id, seq: r.localSeq, key: key, value: value}
		r.propose(&c, c.appendTo(nil), pending{seq: c.seq, done: func(b []byte) {
			if b[0] == statusOK {
				done(nil)
			} else {
				done(ErrRetry)
			}
		}})
	})
}

// localClient marks the client IDs of Propose: clients use IDs below it.
const localClient = 1 << 63

// Errors of Propose.
var (
	ErrNotLeader = errors.New("rawkv: not the leader")
	ErrRetry     = errors.New("rawkv: not applied (leadership changed or proposal dropped); try again")
)
