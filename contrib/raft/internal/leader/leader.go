// Package leader is the client side that contrib/raft's replicated stores
// (kvstore, over hashicorp/raft, and rawkv, over etcd's RawNode) share:
// a Router sends a command to the replica it believes leads, follows "not
// leader" redirects at once, moves on from a replica that does not answer
// in time, and retries with a short backoff until a replica answers or the
// context ends. The stores retry a command under the same (client id,
// sequence number), so a command sent many times is applied once.
//
// A response's first byte is its status. StatusNotLeader (followed by the
// leader's address, if the replica knows it) and StatusRetry are the
// Router's to handle; every other response is the caller's.
package leader

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/erpc-go/erpc"
)

// The statuses the Router understands; a store's own start at StatusOwn.
const (
	StatusOK        byte = 0 // the answer follows
	StatusNotLeader byte = 1 // followed by the leader's address, if known
	StatusRetry     byte = 2 // no answer this time (leadership changing): try again
	StatusOwn       byte = 3
)

// ErrGaveUp is returned when the context ends before a replica answered;
// the command may or may not have been applied.
var ErrGaveUp = errors.New("no answer from the replicas before the deadline")

// Router is not safe for concurrent use: its owner runs one command at a
// time.
type Router struct {
	// AttemptTimeout bounds one try at one replica (default 500 ms).
	AttemptTimeout time.Duration

	ep       *erpc.Endpoint
	replicas []string
	leader   string
	sessions map[string]*erpc.Session
}

// NewRouter routes through ep to the replicas, trying replicas[0] first.
func NewRouter(ep *erpc.Endpoint, replicas []string) *Router {
	return &Router{AttemptTimeout: 500 * time.Millisecond, ep: ep, replicas: replicas,
		leader: replicas[0], sessions: make(map[string]*erpc.Session)}
}

// Do calls method with req until a replica answers with a status of the
// caller's, and returns that response. With anyReplica each try goes to a
// random replica instead of the leader (for reads that may be stale). req
// must not change until Do returns; erpc reads it no longer.
func (r *Router) Do(ctx context.Context, method string, req []byte, anyReplica bool) ([]byte, error) {
	backoff := time.Millisecond
	for {
		if ctx.Err() != nil {
			return nil, ErrGaveUp
		}
		target := r.leader
		if anyReplica {
			target = r.replicas[rand.IntN(len(r.replicas))]
		}
		resp, err := r.try(ctx, target, method, req)
		switch {
		case err != nil || len(resp) == 0:
			r.forget(target)
			r.next(target)
		case resp[0] == StatusNotLeader && len(resp) > 1:
			if r.leader = string(resp[1:]); r.leader != target {
				continue // redirect at once
			}
		case resp[0] == StatusNotLeader:
			r.next(target) // no leader known there: ask another
		case resp[0] != StatusRetry:
			return resp, nil
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil, ErrGaveUp
		}
		backoff = min(2*backoff, 20*time.Millisecond)
	}
}

// forget drops the session to a replica that failed, so that the next try
// dials its name again: a replica restarted elsewhere under the same name
// (a new address on the in-memory network, a new host behind a DNS name)
// is found, where the old session would keep calling the old address.
func (r *Router) forget(target string) {
	if s := r.sessions[target]; s != nil {
		s.Close()
		delete(r.sessions, target)
	}
}

// next moves on from a replica that failed.
func (r *Router) next(failed string) {
	for i, a := range r.replicas {
		if a == failed {
			r.leader = r.replicas[(i+1)%len(r.replicas)]
			return
		}
	}
	r.leader = r.replicas[0]
}

func (r *Router) try(ctx context.Context, target, method string, req []byte) ([]byte, error) {
	actx, cancel := context.WithTimeout(ctx, r.AttemptTimeout)
	defer cancel()
	s := r.sessions[target]
	if s == nil {
		var err error
		if s, err = r.ep.Dial(actx, target); err != nil {
			return nil, err
		}
		r.sessions[target] = s
	}
	return s.Call(actx, method, req, nil)
}
