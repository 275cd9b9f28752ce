package erpc

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
)

// StatsHandler is told of every call an endpoint makes or serves and of
// its sessions coming and going: the hook for metrics and tracing (see
// contrib/otel and contrib/prometheus). Install it with WithStatsHandler.
// Its methods run on the goroutines involved (a caller's, the endpoint's
// loop, a background worker), so they must be quick and safe for
// concurrent use. An endpoint without one pays a nil check per call.
//
// The loop itself calls CallBegin and CallEnd of served calls (as a
// request arrives, as its answer goes, for a request refused at once),
// CallBegin and CallEnd of Session.Go calls (as the loop takes the call,
// so a Session.Go call with a StatsHandler always takes the loop's
// queue, and before its continuation; a Session.Go made once the
// endpoint has closed is not reported), and SessionEvent. A method that
// ends the loop's goroutine there (runtime.Goexit, as t.FailNow does)
// ends only that goroutine: it is logged once, naming the method, and
// the loop goes on on a fresh one, as after a continuation's Goexit; a
// served call whose CallBegin ended so is answered Internal, as never run
// (NotExecuted), and a Session.Go call whose CallBegin or CallEnd ended
// so still goes and gets its continuation, once, with its outcome (a
// stream's exchanges and a Client's attempts are such calls: they are
// neither lost nor left waiting). A panic there is not recovered: it
// ends the process, as any unrecovered panic does. Called from user code
// (a blocking call's CallBegin and CallEnd), a method's Goexit or panic
// is that code's own.
type StatsHandler interface {
	// CallBegin is told of a call as it starts. The context it returns
	// becomes the call's: on the server side, the handler's context sees
	// its values (a tracer's span, say) and CallEnd gets it.
	CallBegin(ctx context.Context, info CallInfo) context.Context
	// CallEnd is told of the call's end.
	CallEnd(ctx context.Context, info CallInfo, end CallEnd)
	// SessionEvent is told of a session that came up or went down.
	SessionEvent(ev SessionEvent)
}

// CallInfo describes a call.
type CallInfo struct {
	Method   string         // "" for a request to a method the server does not have
	Server   bool           // a call this endpoint serves (else one it makes)
	Peer     netip.AddrPort // the other end: for a Client's call, the replica this attempt went to
	Target   string         // the client's: what its session dialed (a name, before resolving; a Client's replica's address)
	Start    time.Time
	ReqBytes int
}

// CallEnd is how a call ended.
type CallEnd struct {
	RespBytes   int
	Code        Code  // OK, or the error's code (ResourceExhausted: refused at once, NEBULA's NACK)
	Err         error // nil for OK
	Duration    time.Duration
	Retransmits int // the client's retransmissions for this call (client side)
}

// SessionEvent is a session that came up or went down.
type SessionEvent struct {
	ID     uint64 // the session's, unique within the endpoint: its up and its down carry the same
	Up     bool
	Server bool // a session a client opened to this endpoint (else one it dialed)
	Peer   netip.AddrPort
	Err    error // why it went down; nil when up or closed
	// ConnectFailed marks the down of a dialed session that never came
	// up (no up event preceded it): a failed dial.
	ConnectFailed bool
}

// WithStatsHandler installs h on the endpoint.
func WithStatsHandler(h StatsHandler) Option { return func(o *options) { o.stats = h } }

// callerCtx is the context a server's CallBegin gets: the caller's
// metadata and address, and nothing of the request's own context, whose
// values the returned context's extend (see reqCtx.Value).
type callerCtx struct {
	context.Context
	md   Metadata
	peer netip.AddrPort
	auth *PeerAuth
}

func (c callerCtx) Value(key any) any {
	switch key.(type) {
	case incomingKey:
		return c.md
	case peerKey:
		return c.peer
	case peerAuthKey:
		return c.auth
	}
	return c.Context.Value(key)
}

// sessionEvent tells the StatsHandler, if any, of a session up or down.
func (ep *Endpoint) sessionEvent(ev proto.Event, up, server bool) {
	if !up {
		ep.streamsSessionDown(ev.Session, server, ev.Err) // its streams end (stream_hub.go)
	}
	if sh := ep.opts.stats; sh != nil {
		var err error
		if !up && !errors.Is(ev.Err, proto.ErrSessionClosed) {
			err = engineError(ev.Err)
		}
		ep.sessionEventOnLoop(sh, SessionEvent{ID: uint64(ev.Session), Up: up, Server: server, Peer: ev.Peer, Err: err,
			ConnectFailed: !up && !server && !ev.WasUp})
	}
}

// Errors of served calls refused before a handler ran, as CallEnd reports
// them.
var (
	errUnknownMethod = &Error{Code: Unimplemented, Msg: "no such method"}
	errShuttingDown  = &Error{Code: Unavailable, Msg: "server shutting down"}
	errQueueFull     = &Error{Code: ResourceExhausted, Msg: "server queue full"}
	errBadMetadata   = &Error{Code: InvalidArgument, Msg: "malformed request metadata"}
)

// refuse answers the engine's request h, to method, with err (payload,
// err's code) before a request was made for it, and tells the
// StatsHandler, if any: begin and end at once, after the answer, as the
// last step (see refusedServed), and with what it reads of h (which the
// answer releases) read before.
func (ep *Endpoint) refuse(now proto.Time, h proto.ReqHandle, method string, err *Error, payload []byte) {
	sh := ep.opts.stats
	var info CallInfo
	if sh != nil {
		info = CallInfo{Method: method, Server: true, Peer: h.Peer(), Start: time.Now(), ReqBytes: len(h.Data())}
	}
	_ = ep.eng.Respond(now, h, uint8(err.Code), payload)
	if sh != nil {
		ep.refusedServed(sh, info, err)
	}
}
