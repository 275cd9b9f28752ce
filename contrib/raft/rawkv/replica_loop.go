package rawkv

import (
	"fmt"
	"slices"

	"github.com/erpc-go/erpc"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Everything in this file runs on the replica's event loop: serving
// messages and client requests, and handling what raft has Ready.

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
