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
	"google.golang.org/protobuf/proto"
)

// Config configures one replica.
type Config struct {
	// ID is the replica's raft ID, 1..len(Peers).
	ID uint64
	// Peers are the erpc addresses of all replicas, Peers[i] for ID i+1,
	// this one's included. They serve raft messages and clients alike.
	Peers []string
	// Endpoint is the replica's endpoint, open on Peers[ID-1]: the one
	// that Listen of the server given to Register opened. Close closes it.
	Endpoint *erpc.Endpoint
	// Service is what Register added to that server; the replica serves
	// its methods once it is started.
	Service *Service
	// TickInterval is the time between raft ticks (default 10 ms).
	TickInterval time.Duration
	// ElectionTick and HeartbeatTick are raft's timeouts in ticks
	// (defaults 10 and 1, the ratio etcd recommends).
	ElectionTick, HeartbeatTick int
	// SnapshotEvery is how many applied entries pass between snapshots,
	// after which the log is compacted (default 10000).
	SnapshotEvery uint64
	// SnapshotKeep is how many entries before a snapshot stay in the log
	// for followers a little behind (default 1000).
	SnapshotKeep uint64
	// MaxInflight bounds the message batches in flight to one peer;
	// further messages to it are dropped, which raft recovers from
	// (default 64).
	MaxInflight int
	// Drop, if set, is asked before every message from one replica to
	// another and drops it when it says so (tests build partitions on it).
	// It is called on the event loop and must not block.
	Drop func(from, to uint64) bool
}

func (c *Config) defaults() {
	if c.TickInterval <= 0 {
		c.TickInterval = 10 * time.Millisecond
	}
	if c.ElectionTick <= 0 {
		c.ElectionTick = 10
	}
	if c.HeartbeatTick <= 0 {
		c.HeartbeatTick = 1
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = 10000
	}
	if c.SnapshotKeep == 0 {
		c.SnapshotKeep = 1000
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 64
	}
}

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

// Service is a replica's methods (MethodMsg, MethodPut, MethodGet) on an
// erpc server. The server serves from its first packet, but a replica
// needs the endpoint that the server's Listen opens (it dials its peers
// from it and runs on its loop): so Register adds the methods before
// Listen, and StartReplica attaches the replica once it is ready. Until
// then the methods answer Unavailable: a peer's raft treats that as a lost
// message and a client tries another replica.
//
//	srv := erpc.NewServer()
//	svc, err := rawkv.Register(srv)
//	ep, err := srv.Listen(addr)
//	r, err := rawkv.StartReplica(ctx, rawkv.Config{ID: id, Peers: peers, Endpoint: ep, Service: svc})
type Service struct {
	r atomic.Pointer[Replica]
}

// Register adds the replica's methods to srv, which must not serve yet.
func Register(srv *erpc.Server) (*Service, error) {
	svc := &Service{}
	for _, h := range []struct {
		m  string
		fn func(erpc.Request)
	}{{MethodMsg, svc.serveMsg}, {MethodPut, svc.serveKV}, {MethodGet, svc.serveKV}} {
		// OnLoop: the handlers use the replica's loop-owned state, so
		// they must never be handed off the loop however long they run.
		if err := srv.HandleRaw(h.m, h.fn, erpc.OnLoop()); err != nil {
			return nil, err
		}
	}
	return svc, nil
}

var errStarting = erpc.Errorf(erpc.Unavailable, "rawkv: replica starting")

func (svc *Service) serveMsg(req erpc.Request) {
	if r := svc.r.Load(); r != nil {
		r.serveMsg(req)
		return
	}
	req.RespondError(errStarting)
}

func (svc *Service) serveKV(req erpc.Request) {
	if r := svc.r.Load(); r != nil {
		r.serveKV(req)
		return
	}
	req.RespondError(errStarting)
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

// ---- everything below runs on the event loop ----

// serveMsg steps a batch of raft messages from another replica and
// answers with the messages this replica has for it in return (an
// AppendEntries response, a vote), so a replication round trip is one
// erpc call.
func (r *Replica) serveMsg(req erpc.Request) {
	if r.closed.Load() {
		req.Respond(nil)
		return
	}
	r.inReply, r.replyTo, r.reply = true, 0, nil
	err := eachMsg(req.Data(), func(m *pb.Message) {
		r.replyTo = m.GetFrom()
		_ = r.rn.Step(m) // errors are stale or foreign messages: dropped, as raft expects
	})
	if err == nil {
		r.process()
	}
	out := r.reply
	r.inReply, r.replyTo, r.reply = false, 0, nil
	if err != nil {
		req.RespondError(erpc.Errorf(erpc.InvalidArgument, "%v", err))
		return
	}
	req.Respond(out)
}

// serveKV serves a client's Put or Get: the leader proposes it and answers
// once it is applied; other replicas redirect.
func (r *Replica) serveKV(req erpc.Request) {
	var c command
	if err := c.decode(req.Data()); err != nil || c.client >= localClient {
		req.RespondError(erpc.Errorf(erpc.InvalidArgument, "rawkv: bad command"))
		return
	}
	if !r.isLeader {
		req.Respond(r.notLeader())
		return
	}
	if s, ok := r.sessions[c.client]; ok && c.seq <= s.seq {
		if c.seq == s.seq { // a retry of the last applied command
			req.Respond(s.result) // Respond copies: the table keeps s.result
		} else {
			req.Respond([]byte{statusStale})
		}
		return
	}
	// raft keeps the entry's data: copy it out of erpc's buffer.
	r.propose(&c, slices.Clone(req.Data()), pending{seq: c.seq, req: req})
}

func (r *Replica) notLeader() []byte {
	b := []byte{statusNotLeader}
	if r.lead != 0 && r.lead != r.id {
		b = append(b, r.cfg.Peers[r.lead-1]...)
	}
	return b
}

// propose appends a command to the log and registers who waits for it.
func (r *Replica) propose(c *command, data []byte, p pending) {
	if old, ok := r.pending[c.client]; ok { // the client gave up on it and moved on
		old.answer([]byte{statusRetry})
	}
	r.pending[c.client] = p
	if err := r.rn.Propose(data); err != nil {
		delete(r.pending, c.client)
		p.answer([]byte{statusRetry})
		return
	}
	r.process()
}

func (r *Replica) onTick() {
	if r.closed.Load() {
		return
	}
	r.rn.Tick()
	r.process()
}

// process handles every Ready raft has, in raft's order: persist (append
// to the in-memory storage, on this goroutine, so before anything is
// sent), send, apply, Advance.
func (r *Replica) process() {
	for {
		// Failed sends are reported to raft between Readies, never
		// between a Ready and its Advance.
		for len(r.reports) > 0 {
			fns := r.reports
			r.reports = nil
			for _, fn := range fns {
				fn()
			}
		}
		if !r.rn.HasReady() {
			return
		}
		rd := r.rn.Ready()
		if rd.SoftState != nil {
			r.setSoftState(rd.SoftState)
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			r.restore(rd.Snapshot)
		}
		if !raft.IsEmptyHardState(rd.HardState) {
			_ = r.st.SetHardState(rd.HardState)
		}
		if len(rd.Entries) > 0 {
			if err := r.st.Append(rd.Entries); err != nil {
				panic(fmt.Sprintf("rawkv: append to memory storage: %v", err))
			}
		}
		// Committed entries are durable on a majority already: applying
		// them before sending answers the clients first (erpc transmits in
		// the order the loop is handed work).
		for _, e := range rd.CommittedEntries {
			r.apply(e)
		}
		r.send(rd.Messages)
		r.rn.Advance(rd)
		r.maybeSnapshot()
	}
}

func (r *Replica) setSoftState(ss *raft.SoftState) {
	r.lead = ss.Lead
	r.leader.Store(ss.Lead)
	wasLeader := r.isLeader
	r.isLeader = ss.RaftState == raft.StateLeader
	if wasLeader && !r.isLeader {
		// What this replica proposed may still commit under the next
		// leader, or not: the clients retry there, and the session table
		// keeps a retry from applying twice.
		for id, p := range r.pending {
			p.answer(r.notLeader())
			delete(r.pending, id)
		}
	}
}

// send batches the messages per destination and sends each batch as one
// call, or, for the replica whose message this one is handling, in the
// handler's response.
func (r *Replica) send(msgs []*pb.Message) {
	for _, m := range msgs {
		to := m.GetTo()
		p := r.peers[to]
		if p == nil {
			continue
		}
		isSnap := m.GetType() == pb.MsgSnap
		if (r.cfg.Drop != nil && r.cfg.Drop(r.id, to)) || p.inflight >= r.cfg.MaxInflight {
			r.unreachable(to, isSnap)
			continue
		}
		var err error
		if r.inReply && to == r.replyTo && !isSnap {
			r.reply, err = appendMsg(r.reply, m)
		} else {
			p.out, err = appendMsg(p.out, m)
			p.hasSnap = p.hasSnap || isSnap
		}
		if err != nil {
			panic(fmt.Sprintf("rawkv: marshal %v: %v", m.GetType(), err))
		}
	}
	for _, p := range r.peers {
		if p.out != nil {
			r.flush(p)
		}
	}
}

// flush sends p's batch. The call's buffer is the engine's until the
// continuation runs, so each batch is a new slice.
func (r *Replica) flush(p *peer) {
	out, snap := p.out, p.hasSnap
	p.out, p.hasSnap = nil, false
	p.inflight++
	p.sess.Go(MethodMsg, out, nil, func(resp []byte, err error) {
		if r.closed.Load() {
			return // the loop has stopped or is stopping: leave raft alone
		}
		p.inflight--
		if err != nil {
			r.unreachable(p.id, snap)
			r.process() // runs the report
			return
		}
		if snap {
			r.rn.ReportSnapshot(p.id, raft.SnapshotFinish)
		}
		_ = eachMsg(resp, func(m *pb.Message) { _ = r.rn.Step(m) })
		r.process()
	})
}

// unreachable tells raft a message to id was lost, after the current
// Ready is done with.
func (r *Replica) unreachable(id uint64, snap bool) {
	r.reports = append(r.reports, func() {
		r.rn.ReportUnreachable(id)
		if snap {
			r.rn.ReportSnapshot(id, raft.SnapshotFailure)
		}
	})
}

// apply applies one committed entry to the store and answers whoever
// waits for it here.
func (r *Replica) apply(e *pb.Entry) {
	r.appliedIx = e.GetIndex()
	defer r.applied.Store(r.appliedIx)
	switch e.GetType() {
	case pb.EntryConfChange:
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err == nil {
			r.confState = r.rn.ApplyConfChange(&cc)
		}
		return
	case pb.EntryConfChangeV2:
		var cc pb.ConfChangeV2
		if err := proto.Unmarshal(e.GetData(), &cc); err == nil {
			r.confState = r.rn.ApplyConfChange(&cc)
		}
		return
	}
	var c command
	if len(e.GetData()) == 0 || c.decode(e.GetData()) != nil {
		return // a new leader's empty entry
	}
	s, seen := r.sessions[c.client]
	var res []byte
	switch {
	case seen && c.seq <= s.seq: // a retry already applied
		if c.seq != s.seq {
			return
		}
		res = s.result
	case c.op == OpPut:
		r.kv[string(c.key)] = slices.Clone(c.value)
		res = okResult(false, nil)
	default:
		v, ok := r.kv[string(c.key)]
		res = okResult(ok, v)
	}
	r.sessions[c.client] = session{seq: c.seq, result: res}
	if p, ok := r.pending[c.client]; ok && p.seq == c.seq {
		delete(r.pending, c.client)
		p.answer(res) // Respond copies (and done only reads it): the table keeps res
	}
}

// maybeSnapshot snapshots the store every SnapshotEvery applied entries
// and drops the log before it, but for SnapshotKeep entries.
func (r *Replica) maybeSnapshot() {
	if r.appliedIx-r.snapIx < r.cfg.SnapshotEvery {
		return
	}
	data := encodeState(r.kv, r.sessions)
	if _, err := r.st.CreateSnapshot(r.appliedIx, r.confState, data); err != nil {
		return
	}
	r.snapIx = r.appliedIx
	if r.snapIx > r.cfg.SnapshotKeep {
		_ = r.st.Compact(r.snapIx - r.cfg.SnapshotKeep)
	}
}

// restore replaces the store with a snapshot from the leader.
func (r *Replica) restore(snap *pb.Snapshot) {
	kv, sessions, err := decodeState(snap.GetData())
	if err != nil {
		panic(fmt.Sprintf("rawkv: corrupt snapshot: %v", err))
	}
	if err := r.st.ApplySnapshot(snap); err != nil {
		panic(fmt.Sprintf("rawkv: apply snapshot: %v", err))
	}
	r.kv, r.sessions = kv, sessions
	r.confState = snap.GetMetadata().GetConfState()
	r.appliedIx, r.snapIx = snap.GetMetadata().GetIndex(), snap.GetMetadata().GetIndex()
	r.applied.Store(r.appliedIx)
}
