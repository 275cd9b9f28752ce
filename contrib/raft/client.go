package raft

//lint:file-ignore SA1019 raft's deprecated Leader and Candidate fields are still carried: raft servers of older protocol versions read them

import (
	"context"
	"sync"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/hashicorp/raft"
)

// Client side. Each peer gets up to three erpc sessions, opened on first
// use and kept (an erpc session reconnects by itself after the peer
// restarts):
//
//   - bulk: AppendEntries (sync and pipelined), votes, TimeoutNow;
//   - heartbeat: heartbeats only, so they never wait in the bulk session's
//     window or backlog behind big AppendEntries;
//   - snapshot: InstallSnapshot chunks, which are large and slow.
//
// All sessions share the endpoint's event loop, which only moves packets.

type sessKind int

const (
	kindBulk sessKind = iota
	kindHeartbeat
	kindSnapshot
	numKinds
)

type peer struct {
	ep     *erpc.Endpoint
	target string
	mu     [numKinds]sync.Mutex // serializes dialing one kind
	sess   [numKinds]*erpc.Session
	closed bool // under every mu, set by close
}

func (t *Transport) peer(target raft.ServerAddress) (*peer, error) {
	a := t.att.Load()
	if a == nil {
		return nil, ErrNotStarted
	}
	t.peersMu.Lock()
	defer t.peersMu.Unlock()
	if t.peers == nil {
		return nil, ErrTransportShutdown
	}
	p := t.peers[target]
	if p == nil {
		p = &peer{ep: a.ep, target: string(target)}
		t.peers[target] = p
	}
	return p, nil
}

// session returns the peer's session of kind k, dialing it if needed. A
// failed dial is not cached: the next RPC tries again.
func (p *peer) session(ctx context.Context, k sessKind) (*erpc.Session, error) {
	p.mu[k].Lock()
	defer p.mu[k].Unlock()
	if p.closed {
		return nil, ErrTransportShutdown
	}
	if s := p.sess[k]; s != nil {
		return s, nil
	}
	s, err := p.ep.Dial(ctx, p.target)
	if err != nil {
		return nil, err
	}
	p.sess[k] = s
	return s, nil
}

// forget drops a session whose server is gone, so that the next RPC dials
// afresh. An erpc session reconnects by itself to a server restarted on the
// same address, but it resolved its target once: a peer that comes back
// elsewhere under the same name (memnet assigns a restarted name a new
// address) is only found by dialing the name again.
func (p *peer) forget(k sessKind, s *erpc.Session) {
	p.mu[k].Lock()
	if p.sess[k] != s {
		s = nil
	} else {
		p.sess[k] = nil
	}
	p.mu[k].Unlock()
	if s != nil {
		s.Close()
	}
}

func (p *peer) close() {
	for k := range numKinds {
		p.mu[k].Lock()
	}
	p.closed = true
	for k := range numKinds {
		if s := p.sess[k]; s != nil {
			s.Close()
		}
		p.mu[k].Unlock()
	}
}

// call makes one synchronous RPC, dialing included, within timeout.
func (t *Transport) call(target raft.ServerAddress, k sessKind, method string, req []byte, timeout time.Duration) ([]byte, error) {
	if t.closed() {
		return nil, ErrTransportShutdown
	}
	if t.cfg.Drop != nil && t.cfg.Drop(target) {
		return nil, ErrDropped
	}
	p, err := t.peer(target)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := p.session(ctx, k)
	if err != nil {
		return nil, err
	}
	resp, err := s.Call(ctx, method, req, nil)
	if c := erpc.CodeOf(err); c == erpc.Unavailable || c == erpc.DeadlineExceeded {
		p.forget(k, s) // the peer may have moved: dial it afresh next time
	}
	return resp, err
}

// isHeartbeat is raft's heartbeat shape: a term and a leader, nothing else.
func isHeartbeat(a *raft.AppendEntriesRequest) bool {
	return a.Term != 0 && (a.Addr != nil || a.Leader != nil) &&
		a.PrevLogEntry == 0 && a.PrevLogTerm == 0 &&
		len(a.Entries) == 0 && a.LeaderCommitIndex == 0
}

// AppendEntries sends entries, or a heartbeat on the heartbeat session.
func (t *Transport) AppendEntries(_ raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	k, method, timeout := kindBulk, methodAppendEntries, t.cfg.Timeout
	if isHeartbeat(args) {
		k, method, timeout = kindHeartbeat, methodHeartbeat, t.cfg.HeartbeatTimeout
	}
	out, err := t.call(target, k, method, appendAppendEntriesRequest(nil, args), timeout)
	if err != nil {
		return err
	}
	return decodeAppendEntriesResponse(out, resp)
}

// RequestVote asks target for its vote.
func (t *Transport) RequestVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	out, err := t.call(target, kindBulk, methodRequestVote, appendRequestVoteRequest(nil, args), t.cfg.Timeout)
	if err != nil {
		return err
	}
	return decodeRequestVoteResponse(out, resp)
}

// RequestPreVote asks target whether it would vote (raft.WithPreVote).
func (t *Transport) RequestPreVote(_ raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	out, err := t.call(target, kindBulk, methodPreVote, appendRequestPreVoteRequest(nil, args), t.cfg.Timeout)
	if err != nil {
		return err
	}
	return decodeRequestPreVoteResponse(out, resp)
}

// TimeoutNow tells target to start an election at once.
func (t *Transport) TimeoutNow(_ raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	out, err := t.call(target, kindBulk, methodTimeoutNow, appendTimeoutNowRequest(nil, args), t.cfg.Timeout)
	if err != nil {
		return err
	}
	return decodeTimeoutNowResponse(out, resp)
}
