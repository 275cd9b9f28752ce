package kvstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync/atomic"
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

// Service is a replica's client API (MethodDo) on an erpc server. The
// server serves from its first packet, but the replica comes later: its
// raft node needs the raft transport, which needs the endpoint that the
// server's Listen opens. So Register adds the method before Listen, and
// StartReplica attaches the replica to the service; until then MethodDo
// answers Unavailable, and clients try another replica.
//
//	srv := erpc.NewServer()
//	t, err := erpcraft.Register(srv, erpcraft.Config{})
//	svc, err := kvstore.Register(srv)
//	ep, err := srv.Listen(addr)
//	err = t.Start(ep)
//	rp, err := kvstore.StartReplica(kvstore.ReplicaConfig{Transport: t, Service: svc, ...})
type Service struct {
	rp atomic.Pointer[Replica]
}

// Register adds MethodDo to srv, which must not serve yet.
func Register(srv *erpc.Server) (*Service, error) {
	svc := &Service{}
	if err := srv.HandleRaw(MethodDo, svc.serve); err != nil {
		return nil, err
	}
	return svc, nil
}

var errStarting = erpc.Errorf(erpc.Unavailable, "kvstore: replica starting")

// serve passes a request to the replica, once there is one.
func (svc *Service) serve(req erpc.Request) {
	rp := svc.rp.Load()
	if rp == nil {
		req.RespondError(errStarting)
		return
	}
	rp.serve(req)
}

// Replica is one member of the replicated store.
type Replica struct {
	ID      raft.ServerID
	Raft    *raft.Raft
	FSM     *FSM
	Service *Service // serves MethodDo

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
	Transport raft.Transport // started (erpcraft.Transport.Start)
	// Service serves the client API (Register, on the server whose
	// endpoint carries raft's RPCs when raft runs over erpc); the replica
	// is attached to it.
	Service *Service
	// APIAddr maps a raft server ID to the address its client API listens
	// on, for redirecting clients to the leader.
	APIAddr func(raft.ServerID) string
	// StaleReads answers Get from the local FSM on any replica, without
	// the log or a leader check: the deliberately wrong variant that the
	// linearizability test must catch.
	StaleReads bool
}

// StartReplica starts raft and attaches the replica to cfg.Service, which
// then serves MethodDo with it. A Service takes one replica.
func StartReplica(cfg ReplicaConfig) (*Replica, error) {
	if cfg.Service == nil {
		return nil, errors.New("kvstore: ReplicaConfig.Service is required (kvstore.Register)")
	}
	if cfg.Service.rp.Load() != nil {
		return nil, errors.New("kvstore: the service has a replica already")
	}
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
	rp := &Replica{ID: cfg.ID, Raft: r, FSM: fsm, Service: cfg.Service, stale: cfg.StaleReads,
		applyTimout: 5 * time.Second, apiAddr: cfg.APIAddr}
	if !cfg.Service.rp.CompareAndSwap(nil, rp) {
		r.Shutdown()
		return nil, errors.New("kvstore: the service has a replica already")
	}
	return rp, nil
}

// serve runs inline on the endpoint's loop, so it never blocks: raft.Apply
// may wait for the leader loop, so it runs on a goroutine of its own that
// answers when the entry is applied.
func (rp *Replica) serve(req erpc.Request) {
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
