package raft

import (
	"bytes"
	"fmt"

	"github.com/erpc-go/erpc"
	"github.com/hashicorp/raft"
)

// Server side. Every handler is a HandleRaw handler running inline on the
// endpoint's event loop (those that feed raft are erpc.OnLoop, so raft
// sees one session's requests in arrival order: see Register), and none
// of them blocks: a request is decoded, handed to raft, and answered later
// from another goroutine (erpc lets a Request handle be kept and answered
// from any goroutine after its handler returned). Until Start, and after
// Close, they answer Unavailable.
//
//   - Ordinary RPCs go to Consumer() for raft's main loop. raft handles them
//     one at a time and answers each before it takes the next, so a single
//     responder goroutine waits on their response channels in the order
//     they were queued (a FIFO of pendingRPC), instead of one goroutine per
//     request. Were raft ever to answer out of order, that would only delay
//     the later answers, never mix them up: each RPC has its own channel.
//   - Heartbeats go to a dedicated goroutine that calls raft's heartbeat
//     handler, so they never wait behind the main loop or the disk.
//   - InstallSnapshot chunks feed a stream that raft reads (snapshot.go).
//
// The queues are bounded; a request that finds one full is refused at once
// with ResourceExhausted, which raft treats as a failed RPC and retries.

// pendingRPC is an RPC handed to raft whose answer is still owed.
type pendingRPC struct {
	ch     chan raft.RPCResponse
	req    erpc.Request // none (the zero Request) for a snapshot: the stream answers
	stream *snapStream
}

// hbRPC is a heartbeat waiting for the heartbeat goroutine.
type hbRPC struct {
	req erpc.Request
	cmd *raft.AppendEntriesRequest
}

var (
	errFull     = erpc.Errorf(erpc.ResourceExhausted, "erpc/raft: RPC queue full")
	errStarting = erpc.Errorf(erpc.Unavailable, "erpc/raft: transport starting (registered, not started yet)")
	errStopped  = erpc.Errorf(erpc.Unavailable, "erpc/raft: transport shut down")
)

// ready reports whether the transport serves; if not, it answers r with
// Unavailable, which raft treats as a failed RPC and retries later. A
// request can arrive before Start: the server serves raft's methods from
// its first packet, and Start comes after Listen.
func (t *Transport) ready(r erpc.Request) bool {
	switch {
	case t.closed():
		r.RespondError(errStopped)
	case t.att.Load() == nil:
		r.RespondError(errStarting)
	default:
		return true
	}
	return false
}

// dispatch queues cmd for raft's main loop. The check and the two sends
// happen under one lock, so the FIFO of pending answers always matches the
// order of Consumer().
func (t *Transport) dispatch(r erpc.Request, cmd any, reader *snapStream) bool {
	t.dispatchMu.Lock()
	defer t.dispatchMu.Unlock()
	if t.closed() || len(t.consumeCh) == cap(t.consumeCh) || len(t.pending) == cap(t.pending) {
		return false
	}
	ch := make(chan raft.RPCResponse, 1)
	t.pending <- &pendingRPC{ch: ch, req: r, stream: reader}
	rpc := raft.RPC{Command: cmd, RespChan: ch}
	if reader != nil {
		rpc.Reader = reader
	}
	t.consumeCh <- rpc
	return true
}

func (t *Transport) submit(r erpc.Request, cmd any) {
	if !t.dispatch(r, cmd, nil) {
		r.RespondError(errFull)
	}
}

func badRequest(r erpc.Request, err error) {
	r.RespondError(erpc.Errorf(erpc.InvalidArgument, "erpc/raft: %s: %v", r.Method(), err))
}

// The request bytes are copied once, and the decoded structs alias the copy:
// raft keeps entries (Log.Data) after it answered, when erpc reuses its
// buffer.

func (t *Transport) serveAppendEntries(r erpc.Request) {
	if !t.ready(r) {
		return
	}
	cmd := new(raft.AppendEntriesRequest)
	if err := decodeAppendEntriesRequest(bytes.Clone(r.Data()), cmd); err != nil {
		badRequest(r, err)
		return
	}
	if h := appendEntriesHook; h != nil {
		h(cmd)
	}
	t.submit(r, cmd)
}

// appendEntriesHook, set by tests only, runs in the AppendEntries handler
// just before the request goes to raft (to stall the handler there).
var appendEntriesHook func(*raft.AppendEntriesRequest)

func (t *Transport) serveHeartbeat(r erpc.Request) {
	if !t.ready(r) {
		return
	}
	cmd := new(raft.AppendEntriesRequest)
	if err := decodeAppendEntriesRequest(bytes.Clone(r.Data()), cmd); err != nil {
		badRequest(r, err)
		return
	}
	if t.hbHandler.Load() == nil { // raft has not installed it: main loop
		t.submit(r, cmd)
		return
	}
	select {
	case t.hbCh <- &hbRPC{req: r, cmd: cmd}:
	default:
		r.RespondError(errFull)
	}
}

func (t *Transport) serveRequestVote(r erpc.Request) {
	if !t.ready(r) {
		return
	}
	cmd := new(raft.RequestVoteRequest)
	if err := decodeRequestVoteRequest(bytes.Clone(r.Data()), cmd); err != nil {
		badRequest(r, err)
		return
	}
	t.submit(r, cmd)
}

func (t *Transport) servePreVote(r erpc.Request) {
	if !t.ready(r) {
		return
	}
	cmd := new(raft.RequestPreVoteRequest)
	if err := decodeRequestPreVoteRequest(bytes.Clone(r.Data()), cmd); err != nil {
		badRequest(r, err)
		return
	}
	t.submit(r, cmd)
}

func (t *Transport) serveTimeoutNow(r erpc.Request) {
	if !t.ready(r) {
		return
	}
	cmd := new(raft.TimeoutNowRequest)
	if err := decodeTimeoutNowRequest(bytes.Clone(r.Data()), cmd); err != nil {
		badRequest(r, err)
		return
	}
	t.submit(r, cmd)
}

// respondLoop answers the RPCs raft's main loop took, in queue order.
func (t *Transport) respondLoop() {
	defer t.wg.Done()
	for {
		select {
		case p := <-t.pending:
			select {
			case resp := <-p.ch:
				if p.stream != nil {
					p.stream.finish(resp)
				} else {
					answer(p.req, resp)
				}
			case <-t.shutdown:
				return
			}
		case <-t.shutdown:
			return
		}
	}
}

// heartbeatLoop runs raft's heartbeat handler. raft answers a heartbeat
// before the handler returns, or not at all once it is shutting down.
func (t *Transport) heartbeatLoop() {
	defer t.wg.Done()
	for {
		select {
		case hb := <-t.hbCh:
			ch := make(chan raft.RPCResponse, 1)
			if h := t.hbHandler.Load(); h != nil {
				(*h)(raft.RPC{Command: hb.cmd, RespChan: ch})
			}
			select {
			case resp := <-ch:
				answer(hb.req, resp)
			default:
				hb.req.RespondError(erpc.Errorf(erpc.Unavailable, "erpc/raft: heartbeat not handled (shutting down)"))
			}
		case <-t.shutdown:
			return
		}
	}
}

// answer encodes raft's response to r.
func answer(r erpc.Request, resp raft.RPCResponse) {
	if resp.Error != nil {
		r.RespondError(erpc.Errorf(erpc.Unknown, "%s", resp.Error.Error()))
		return
	}
	// Built in the request's response memory: Respond sends it without a
	// copy (a response that outgrows it is copied there).
	b := r.ResponseBuffer(64)[:0]
	switch v := resp.Response.(type) {
	case *raft.AppendEntriesResponse:
		b = appendAppendEntriesResponse(b, v)
	case *raft.RequestVoteResponse:
		b = appendRequestVoteResponse(b, v)
	case *raft.RequestPreVoteResponse:
		b = appendRequestPreVoteResponse(b, v)
	case *raft.TimeoutNowResponse:
		b = appendTimeoutNowResponse(b, v)
	default:
		r.RespondError(erpc.Errorf(erpc.Internal, "erpc/raft: unexpected response type %s", fmt.Sprintf("%T", resp.Response)))
		return
	}
	r.Respond(b)
}
