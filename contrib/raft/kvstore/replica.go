package kvstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/contrib/raft/internal/leader"
	"github.com/hashicorp/raft"
)

// MethodDo is the replica's client-facing method: one Command in, one reply
// out. It shares the endpoint that carries raft's RPCs (when raft runs
// over erpc), so a replica is one event loop.
const MethodDo = "kv.Do"

// Reply status bytes.
const (
	statusOK        = leader.StatusOK
	statusNotLeader = leader.StatusNotLeader // followed by the leader's address, if known
	statusError     = leader.StatusRetry     // followed by a message; the client retries
)

// Replica is one member of the replicated store.
type Replica struct {
	ID       raft.ServerID
	Raft     *raft.Raft
	FSM      *FSM
	Endpoint *erpc.Endpoint // serves MethodDo

	stale       bool
	applyTimout time.Duration
	apiAddr     func(raft.ServerID) string
}

// ReplicaConfig is what StartReplica needs. Stores and the transport are
// given, so that a restart can reuse the stores with a fresh transport.
type ReplicaConfig struct {
	ID        raft.ServerID
	Raft      *raft.Config // LocalID is set from ID
	FSM       *FSM         // nil: a new one
	Logs      raft.LogStore
	Stable    raft.StableStore
	Snaps     raft.SnapshotStore
	Transport raft.Transport
	// Endpoint serves the client API; with the erpc transport it is the
	// transport's own endpoint.
	Endpoint *erpc.Endpoint
	// APIAddr maps a raft server ID to the address its client API listens
	// on, for redirecting clients to the leader.
	APIAddr func(raft.ServerID) string
	// StaleReads answers Get from the local FSM on any replica, without
	// the log or a leader check: the deliberately wrong variant that the
	// linearizability test must catch.
	StaleReads bool
}

// StartReplica starts raft and registers MethodDo.
func StartReplica(cfg ReplicaConfig) (*Replica, error) {
	rc := *cfg.Raft
	rc.LocalID = cfg.ID
	fsm := cfg.FSM
	if fsm == nil {
		fsm = NewFSM()
	}
	r, err := raft.NewRaft(&rc, fsm, cfg.Logs, cfg.Stable, cfg.Snaps, cfg.Transport)
	if err != nil {
		return nil, err
	}
	rp := &Replica{ID: cfg.ID, Raft: r, FSM: fsm, Endpoint: cfg.Endpoint, stale: cfg.StaleReads,
		applyTimout: 5 * time.Second, apiAddr: cfg.APIAddr}
	if err := cfg.Endpoint.HandleRaw(MethodDo, rp.serve); err != nil {
		r.Shutdown()
		return nil, err
	}
	return rp, nil
}

// serve runs inline on the endpoint's loop, so it never blocks: raft.Apply
// may wait for the leader loop, so it runs on a goroutine of its own that
// answers when the entry is applied.
func (rp *Replica) serve(req *erpc.Request) {
	data := bytes.Clone(req.Data()) // raft keeps the entry
	var c Command
	if err := c.decode(data); err != nil {
		req.RespondError(erpc.Errorf(erpc.InvalidArgument, "%v", err))
		return
	}
	if rp.stale && c.Op == OpGet {
		v, ok := rp.FSM.Read(c.Key)
		req.Respond(appendResult(nil, Result{Found: ok, Value: v}))
		return
	}
	if rp.Raft.State() != raft.Leader {
		req.Respond(rp.notLeader())
		return
	}
	go func() {
		f := rp.Raft.Apply(data, rp.applyTimout)
		if err := f.Error(); err != nil {
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
				req.Respond(rp.notLeader())
				return
			}
			req.Respond(append([]byte{statusError}, err.Error()...))
			return
		}
		switch v := f.Response().(type) {
		case Result:
			req.Respond(appendResult(nil, v))
		case error:
			req.Respond(append([]byte{statusError}, v.Error()...))
		}
	}()
}

func (rp *Replica) notLeader() []byte {
	b := []byte{statusNotLeader}
	if _, id := rp.Raft.LeaderWithID(); id != "" && rp.apiAddr != nil {
		b = append(b, rp.apiAddr(id)...)
	}
	return b
}

func appendResult(b []byte, r Result) []byte {
	b = append(b, statusOK)
	if r.Found {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Value)))
	return append(b, r.Value...)
}

func decodeResult(b []byte) (Result, error) {
	if len(b) < 2 {
		return Result{}, errCorrupt
	}
	r := Result{Found: b[1] != 0}
	v, _, ok := byteString(b[2:])
	if !ok {
		return Result{}, errCorrupt
	}
	r.Value = append([]byte(nil), v...)
	return r, nil
}
