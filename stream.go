package erpc

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
)

// Streams
//
// A stream is a long-lived call on a Session in which the client and the
// handler each send any number of messages: server-streaming (one request
// message, many responses), client-streaming (many requests, one
// response) and bidirectional are all the same thing here, a stream on
// which each side sends what it wants. A server registers a handler with
// HandleStream; a client opens one with Session.NewStream:
//
//	srv.HandleStream("Watch", func(s erpc.ServerStream) error {
//		for ev := range events(s.Context()) {
//			if err := s.Send(ev); err != nil {
//				return err
//			}
//		}
//		return nil
//	})
//
//	st, err := sess.NewStream(ctx, "Watch")
//	for {
//		msg, err := st.Recv() // io.EOF at a clean end, the status otherwise
//		...
//	}
//
// Streams are built from erpc's own requests on the session (internal
// methods, invisible in the server's method list), so they inherit
// at-most-once, retransmission, congestion control, multi-packet messages
// and the session's failure detection: the opening runs at most once,
// and a stream's messages arrive exactly once and in order, or the
// stream fails. Since the server speaks only when spoken to, the client
// keeps requests parked at the server per session (not per stream),
// which the server answers when any of the session's streams has
// something for it; messages travel in batches, many per request. A
// session's streams use at most four of its request slots (WithWindow,
// the smaller of the client's and the server's, 8 by default) however
// many there are, and parked requests never hold every slot: two parked
// and two carrying the client's output from a window of 5 up, two and
// one at 4, one and one at 2 and 3 (unary calls share what is left, or
// wait for a slot the client's output frees at once). A window of 1
// leaves no room for a parked request: NewStream then fails with
// FailedPrecondition naming WithWindow.
//
// Each direction of each stream has its own credit window (StreamWindow:
// W messages and B bytes, 16,384 and 4 MiB by default). A sender whose
// window is used blocks in Send until its reader's Recv frees room; a
// slow reader therefore backs up its own stream and nothing else on the
// session. The streams with output share each batch (up to 1 MiB) in
// turns of up to 64 KiB, round after round, so a stream's queued window
// delays another's next message by one turn, not by the whole window
// (besides the batches already on their way). A receiver buffers at most its window (plus one message, the
// last one to start); its reorder ring grows with what it holds, up to
// 32 bytes a message of the window (512 KiB by default). A sender's
// credit never exceeds the window its receiver announced, whatever
// grants a broken or hostile peer sends (they are clamped and counted in
// StreamStats.Refused). An idle stream keeps, besides the last message
// each side's Recv returned (the application's until its next Recv), at
// most 64 KiB of buffers per side for reuse and a few kilobytes of
// state, whatever bursts it carried: larger drained buffers go back to a
// pool the garbage collector empties, and a receiver that gets more
// messages at once than its kept buffers allocates one per message
// beyond them. (Besides its streams, a client
// session with streams open keeps the buffers of its exchange requests,
// up to a batch of 1 MiB each way for each of its four, and the
// engines pool message buffers of their own.)
//
// What bounds a server's stream memory: each stream's receive window
// (StreamWindow given to HandleStream: 4 MiB by default, plus one
// message) and its send window (the client's, capped at 64 MiB plus one
// message), times the streams a session may have open (1,024), times
// the sessions (at most 65,536). WithMaxHeldBytes and Stats.HeldBytes
// count erpc's requests and responses, the batches streams travel in
// included, but not the streams' own buffers: size the windows for the
// number of streams a server must hold. The exchanges a client parks
// (two a session with streams) count in Stats.HeldRequests and
// Stats.ParkedRequests but not against WithMaxHeldRequests, which bounds
// work, and hold no bytes (the batch they came in goes back to the pool
// once its frames are in the streams' windows): idle streams never make
// a server refuse calls. They are released when their session ends,
// however it ends.
//
// Either side ends a stream: the handler by returning (its error, or
// nil, and its trailers reach the client's Recv after the messages it
// sent), the client by canceling the context NewStream was given (the
// handler's context ends within about half a round trip, and its Send
// and Recv fail). A deadline on that context travels with the opening
// and ends both sides. A stream that fails on the client while its
// session lives on (a full server refusing its exchanges until the
// client gives up with ResourceExhausted, say) is canceled on the
// server as the client's cancel is. CloseSend half-closes: the handler's Recv returns
// io.EOF once it has read everything. The session's end (Close, failure,
// either endpoint's Close) and the server's Shutdown end every stream on
// it, both sides, with an Unavailable error saying which (the handler's:
// "the client's session ended", or "this endpoint closed"). A handler
// that panics ends its stream with Internal ("handler panicked"); the
// endpoint logs it and goes on serving.
//
// Buffers: Send copies its message before it returns, so the caller may
// reuse it at once. Recv's message is the stream's memory, valid until
// the next Recv: copy it to keep it. Send and Recv may be called from two
// different goroutines at once, but two goroutines must not both Send (or
// both Recv) on one stream at the same time.

// ServerStream is a stream as its handler (and the server's stream
// interceptors) see it.
type ServerStream interface {
	// Context is the stream's: it carries the client's metadata
	// (IncomingMetadata), its address (PeerFromContext) and deadline, and
	// it ends when the client cancels, the deadline passes, the session
	// ends, or the handler returns.
	Context() context.Context
	// Send sends a message (copied before Send returns), waiting for
	// credit while the client's window is full. It fails once the stream
	// is over for the handler (the context's end, say: the context is
	// done by the time Send or Recv fails for the stream's end), and with
	// InvalidArgument for a message over the session's limit (the smaller
	// of the two ends' WithMaxMessageSize, less 64 bytes).
	Send(msg []byte) error
	// Recv returns the client's next message, valid until the next Recv;
	// io.EOF once the client has closed its side and everything was read.
	Recv() ([]byte, error)
	// SetHeader adds to the response headers, sent with the first message
	// (or with the end); it fails once they have gone.
	SetHeader(md Metadata) error
	// SendHeader adds md to the response headers and sends them now.
	SendHeader(md Metadata) error
	// SetTrailer adds to the trailers, sent with the handler's status.
	SetTrailer(md Metadata)
	// Method is the stream's method name.
	Method() string
}

// ClientStream is a stream as its client (and the endpoint's stream
// interceptors) see it.
type ClientStream interface {
	// Context is the context NewStream was given.
	Context() context.Context
	// Send sends a message (copied before Send returns), waiting for
	// credit while the handler's window is full. It returns io.EOF if the
	// handler has already ended the stream (Recv then gives its status),
	// and InvalidArgument for a message over the session's limit (the
	// smaller of the two ends' WithMaxMessageSize, less 64 bytes).
	Send(msg []byte) error
	// CloseSend says the client sends no more; the handler's Recv
	// returns io.EOF once it has read everything. It returns nil, and
	// does nothing, if the client's side is already closed or the stream
	// over. A Send after it fails with FailedPrecondition.
	CloseSend() error
	// Recv returns the handler's next message, valid until the next Recv;
	// io.EOF when the handler returned nil and everything was read, its
	// status error (an *Error) otherwise.
	Recv() ([]byte, error)
	// Header waits for the response headers (or the stream's end).
	Header() (Metadata, error)
	// Trailer is the handler's trailers (SetTrailer), once Recv has
	// returned io.EOF or the handler's status; nil before, and nil if the
	// stream ended without the handler's end reaching the client
	// (canceled, the session lost).
	Trailer() Metadata
	// Method is the stream's method name.
	Method() string
}

// StreamHandler serves one stream; its return ends the stream with that
// status (nil: OK), after the messages it sent. A panic ends it with
// Internal, and the endpoint goes on.
type StreamHandler func(s ServerStream) error

// StreamOption configures a stream handler (HandleStream) or a stream a
// client opens (NewStream).
type StreamOption func(*streamConfig)

type streamConfig struct {
	msgs, bytes int
}

// Default stream windows, and the most a client may ask of a server.
const (
	defaultStreamMsgs  = 16384
	defaultStreamBytes = 4 << 20
	maxStreamMsgs      = 1 << 16
	maxStreamBytes     = 64 << 20
	// maxStreamsPerSession bounds the streams one client session may have
	// open on a server at once; more are refused with ResourceExhausted.
	maxStreamsPerSession = 1024
)

// StreamWindow sets the receive window of a stream's side: how many
// messages and bytes its peer may send ahead of the Recv calls (default
// 16,384 and 4 MiB). A reader holds at most that much, plus one message.
// Given to HandleStream it sizes the handler's side; to NewStream, the
// client's. A server caps what a client asks at 65,536 messages and 64
// MiB (and a client a server's), and no grant takes a sender beyond it.
// A server's stream memory is bounded by its windows, not by
// WithMaxHeldBytes: see "What bounds a server's stream memory" above.
func StreamWindow(msgs, bytes int) StreamOption {
	return func(c *streamConfig) {
		c.msgs = min(max(msgs, 1), maxStreamMsgs)
		c.bytes = min(max(bytes, 1), maxStreamBytes)
	}
}

func newStreamConfig(opts []StreamOption) streamConfig {
	c := streamConfig{msgs: defaultStreamMsgs, bytes: defaultStreamBytes}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// The internal methods streams travel on. A server registers them with
// its first stream handler; they are not in its method list.
const (
	streamMethodPrefix = "erpc.stream/"
	streamOpenMethod   = streamMethodPrefix + "open"
	streamXchgMethod   = streamMethodPrefix + "exchange"
)

func isInternalMethod(name string) bool { return strings.HasPrefix(name, streamMethodPrefix) }

type streamHandler struct {
	name string
	fn   StreamHandler
	cfg  streamConfig
}

// HandleStream registers a stream handler. It runs on a goroutine of its
// own per stream (a stream's handler blocks by nature), never on the
// event loop. Register every handler before Listen. Each stream it
// serves may hold its receive window (opts: StreamWindow) and the
// client's, up to 1,024 streams a session: WithMaxHeldBytes does not
// count them.
func (s *Server) HandleStream(method string, fn StreamHandler, opts ...StreamOption) error {
	if fn == nil {
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("register stream %q: nil handler", method)}
	}
	if method == "" || isInternalMethod(method) {
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("register stream %q: the name is empty or reserved", method)}
	}
	s.mu.Lock()
	serving, first := s.serving, s.streams == nil
	_, dup := s.streams[method]
	unary := s.table.byID[methodID(method)] != nil
	s.mu.Unlock()
	switch {
	case serving:
		return &Error{Code: FailedPrecondition, Msg: fmt.Sprintf(
			"register stream %q: the server already serves; register every handler before Listen", method)}
	case dup || unary:
		return &Error{Code: AlreadyExists, Msg: fmt.Sprintf("method %q registered twice", method)}
	}
	if first {
		if err := s.registerStreamMethods(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serving { // Listen came meanwhile: the table no longer changes
		return &Error{Code: FailedPrecondition, Msg: fmt.Sprintf(
			"register stream %q: the server already serves; register every handler before Listen", method)}
	}
	if s.streams == nil {
		s.streams = map[string]*streamHandler{}
	}
	s.streams[method] = &streamHandler{name: method, fn: fn, cfg: newStreamConfig(opts)}
	return nil
}

// registerStreamMethods registers the internal methods. They must run
// inline, on the loop: they only move frames between the session and the
// streams' buffers, and the state they touch (Endpoint.streams) is the
// loop's. A change of the default dispatch must leave them there.
func (s *Server) registerStreamMethods() error {
	// onLoop: both touch the loop's stream state, so they must never be
	// handed off the loop (a handoff can come from the OS descheduling
	// the loop, not only from a slow handler).
	if err := s.register(&handler{name: streamOpenMethod, run: serveStreamOpen, onLoop: true}); err != nil {
		return err
	}
	return s.register(&handler{name: streamXchgMethod, run: serveStreamExchange, onLoop: true})
}

// streamHandlerFor is the handler of a stream method (nil if none); the
// table no longer changes once the server serves.
func (s *Server) streamHandlerFor(method []byte) *streamHandler {
	if s == nil {
		return nil
	}
	return s.streams[string(method)]
}

// StreamStats counts an endpoint's streams.
type StreamStats struct {
	Opened  uint64 // streams its handlers served
	Active  uint64 // served streams not yet over
	Refused uint64 // frames refused: unknown streams, beyond the window (messages, and grants, clamped to it), malformed
}

type streamCounters struct {
	opened, active, refused atomic.Uint64
}

// StreamStats returns the endpoint's stream counters.
func (ep *Endpoint) StreamStats() StreamStats {
	c := &ep.streams.count
	return StreamStats{Opened: c.opened.Load(), Active: c.active.Load(), Refused: c.refused.Load()}
}
