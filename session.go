package erpc

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
)

// Session is a client's connection to one server endpoint, over which it
// makes calls. It is safe for concurrent use. Calls on one session share its
// window of concurrent requests (8 by default; more wait in a backlog) and
// its packet credits.
//
// A session survives server restarts: when its server fails or restarts,
// the calls in flight fail with Unavailable (they may or may not have run;
// erpc never runs a request twice, so it does not retry them), and the next
// call reconnects, backing off with jitter after repeated failures. The
// one exception is a call the session's end proves never ran (not yet
// sent, or sent only after the server had lost the session, say): it is
// sent once more, on a new session, and if that fails the same way its
// error satisfies NotExecuted. A session that ended because the server
// did not answer within the failure timeout (connecting or connected)
// fails such a call at once instead (NotExecuted too): a server that is
// gone fails a call within one failure timeout, not two. A Client's
// session (Client) neither reconnects nor sends such a call again: its
// calls fail NotExecuted and the Client places them on another session
// and dials under its connect rate. Nothing else is ever sent again, a call
// the server refused (ResourceExhausted) included: NotExecuted tells the
// caller which failures it may retry, here or elsewhere.
type Session struct {
	ep           *Endpoint
	target       string
	tlsName      string // the name TLS verifies when the config has none; "" is the target's host
	addr         netip.AddrPort
	closed       atomic.Bool
	ownsEndpoint bool // made by the package-level Dial

	// What a Client watches (client_replica.go): its server said it is
	// shutting down, engine sessions that ended, and whom to tell (run
	// on the loop; it must not block).
	draining atomic.Bool
	downs    atomic.Uint32
	watch    atomic.Pointer[func()]
	// byClient: a Client's session, which never reconnects on its own
	// (the Client dials a new one, under its connect rate).
	byClient atomic.Bool
	// openStreams counts the streams opened on it and not yet over
	// (stream_pump.go), for a Client's drain of a retired session.
	openStreams atomic.Int64

	first     chan struct{} // closed when the first connect succeeds or fails
	firstOnce sync.Once
	firstErr  *Error // why the first connect failed, without the target (dialError adds it)

	auth atomic.Pointer[PeerAuth] // the server's, as verified when the session last opened (peerauth.go)

	// Owned by the loop.
	sid         proto.SessionID
	tag         uint64 // WithTLS: the engine session's association ID
	tlsErr      *Error // WithTLS: why the engine session's handshake failed
	live        bool   // an engine session exists (connecting or up)
	failures    int
	lastErr     error
	nextAttempt proto.Time
}

// Addr is the server's address: the one of the target's addresses that
// accepted the session, IPv4 in its plain form (never IPv4-mapped).
func (s *Session) Addr() netip.AddrPort { return s.addr }

// Target is what the session was dialed with, as given to Dial.
func (s *Session) Target() string { return s.target }

// Endpoint is the endpoint the session belongs to.
func (s *Session) Endpoint() *Endpoint { return s.ep }

// Close ends the session: its pending calls fail with Unavailable and the
// server is told. A session made by the package-level Dial also closes its
// endpoint. It may be called from anywhere, the endpoint's own loop
// included.
func (s *Session) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if g, ok := s.ep.pinLoop(); ok {
		s.closeOnLoop(s.ep.loop.now)
		s.ep.unpinLoop(g)
		if s.ownsEndpoint {
			return s.ep.Close()
		}
		return nil
	}
	done := make(chan struct{})
	s.ep.post(command{kind: cmdCloseSess, sess: s, fn: func() { close(done) }})
	select {
	case <-done:
	case <-s.ep.loopDone:
	}
	if s.ownsEndpoint {
		return s.ep.Close()
	}
	return nil
}

// connect opens an engine session to the server (on the loop).
func (s *Session) connect(now proto.Time) {
	s.draining.Store(false) // a new engine session: its server says anew
	s.tag, s.tlsErr = 0, nil
	if s.ep.sec != nil {
		tag, err := s.ep.sec.dial(now, s)
		if err != nil { // cannot happen with a checked config; fail the session as a refusal would
			s.tlsErr = &Error{Code: Unauthenticated, Msg: "TLS: " + err.Error(), Cause: err}
		}
		s.tag = tag
		s.ep.tlsStartClient(tag) // off the loop: the ClientHello may call the user's session cache
	}
	s.sid = s.ep.eng.ConnectTagged(now, s.addr, s.tag)
	if s.tlsErr != nil {
		_ = s.ep.eng.Close(now, s.sid)
	}
	s.live = true
	s.ep.loop.sessions[s.sid] = s
}

// ensure returns the engine session to send on, reconnecting if the last
// one failed, unless the session is closed or backing off.
func (s *Session) ensure(now proto.Time) (proto.SessionID, *Error) {
	switch {
	case s.closed.Load():
		return 0, errSessionClosed
	case s.live:
		return s.sid, nil
	case now < s.nextAttempt: // the call never leaves: NotExecuted
		return 0, notRun(&Error{Code: Unavailable, Msg: "reconnecting after failure: " + s.lastErr.Error(), Cause: s.lastErr})
	case s.byClient.Load(): // its Client redials, not the session
		return 0, notRun(&Error{Code: Unavailable, Msg: "session ended: its Client dials a new one", Cause: s.lastErr})
	}
	s.connect(now)
	return s.sid, nil
}

// errSessionClosed is the error of a call made on a closed session: it
// never left (NotExecuted).
var errSessionClosed = notRun(&Error{Code: Unavailable, Msg: "session closed", Cause: proto.ErrSessionClosed})

func (s *Session) onUp() {
	s.failures = 0
	s.firstOnce.Do(func() { close(s.first) })
}

// onDown records why the engine session ended and when to try again: at
// once after a first failure (a restarted server), then with exponential
// backoff and jitter, so that a fleet of clients does not reconnect in step.
func (s *Session) onDown(now proto.Time, err error) {
	s.downs.Add(1)
	s.notifyWatch()
	s.live = false
	s.lastErr = err
	s.failures++
	if s.failures > 1 {
		d := min(10*time.Millisecond<<min(s.failures-2, 10), time.Second)
		d = d/2 + rand.N(d)
		s.nextAttempt = now.Add(d)
	}
	if s.tlsErr != nil {
		s.lastErr = s.tlsErr
	}
	s.firstOnce.Do(func() {
		if s.tlsErr != nil {
			s.firstErr = s.tlsErr
			close(s.first)
			return
		}
		e := engineError(err)
		msg := e.Msg
		switch {
		case errors.Is(err, proto.ErrPeerGone):
			msg = "no endpoint accepts connections there"
		case errors.Is(err, proto.ErrConnectTimeout):
			msg = "no answer within the failure timeout: nothing listens there, or the network drops what we send"
		}
		s.firstErr = &Error{Code: e.Code, Msg: msg, Cause: e.Cause} // Dial says where
		close(s.first)
	})
}

// Draining reports whether the session's server has said it is shutting
// down (Endpoint.Shutdown): it refuses new calls (NotExecuted), which
// belong on another server.
func (s *Session) Draining() bool { return s.draining.Load() }

// notifyWatch tells the session's Client, if any, that something changed.
func (s *Session) notifyWatch() {
	if f := s.watch.Load(); f != nil {
		(*f)()
	}
}

// detach forgets engine session sid, which has ended (its down event is
// still queued), so the next call reconnects at once. It must never be
// given a session the engine still has: that one would stay open, on both
// ends, with nothing left to close it. The down event will find no
// session, so detach counts the down itself: a Client's session never
// reconnects, and its Client learns only from downs that it must dial
// another (without this, a restarted server's reset of a call that never
// ran left the Client a dead session it took for ready, forever).
func (s *Session) detach(sid proto.SessionID, err error) {
	if s.live && s.sid == sid {
		delete(s.ep.loop.sessions, sid)
		s.live = false
		s.lastErr = err
		s.downs.Add(1)
		s.notifyWatch()
	}
}

// closeOnLoop closes the engine session; its calls fail.
func (s *Session) closeOnLoop(now proto.Time) {
	if s.live {
		_ = s.ep.eng.Close(now, s.sid)
	}
}
