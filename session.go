package erpc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strings"
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
// error satisfies NotExecuted. Nothing else is ever sent again, a call
// the server refused (ResourceExhausted) included: NotExecuted tells the
// caller which failures it may retry, here or elsewhere.
type Session struct {
	ep           *Endpoint
	target       string
	addr         netip.AddrPort
	closed       atomic.Bool
	ownsEndpoint bool // made by the package-level Dial

	first     chan struct{} // closed when the first connect succeeds or fails
	firstOnce sync.Once
	firstErr  error

	// Owned by the loop.
	sid         proto.SessionID
	live        bool // an engine session exists (connecting or up)
	failures    int
	lastErr     error
	nextAttempt proto.Time
}

// Dial opens a session from ep to the endpoint at target, of the same
// transport as ep: its Target ("udp://host:port", "mem://name",
// "shm:///path/to/socket"), or an address of ep's transport without a
// scheme ("host:port"). It waits until the server accepts the session or
// ctx ends.
func (ep *Endpoint) Dial(ctx context.Context, target string) (*Session, error) {
	if ep.onLoop() {
		return nil, errOnLoop("Dial", "dial before serving, from a Background handler, or from another goroutine")
	}
	if ep.state.Load() != stateOpen {
		return nil, errClosed
	}
	addr, err := ep.resolve(target)
	if err != nil {
		return nil, err
	}
	s := &Session{ep: ep, target: target, addr: addr, first: make(chan struct{})}
	ep.post(command{kind: cmdDial, sess: s})
	select {
	case <-s.first:
		if s.firstErr != nil {
			return nil, s.firstErr
		}
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, contextError(ctx)
	}
}

// Dial opens a client endpoint on an ephemeral port of the transport
// target's scheme names (UDP if none) and a session to target: the
// shortest way to a client. Closing the session closes the endpoint.
func Dial(ctx context.Context, target string, opt ...Option) (*Session, error) {
	scheme, _ := splitTarget(target)
	local := "udp://:0"
	switch scheme {
	case "udp":
	case "mem", "shm":
		local = scheme + "://"
	default:
		return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("dial %q: unknown transport %q (want udp://, mem:// or shm://)", target, scheme)}
	}
	ep, err := Listen(local, opt...)
	if err != nil {
		return nil, err
	}
	s, err := ep.Dial(ctx, target)
	if err != nil {
		ep.Close()
		return nil, err
	}
	s.ownsEndpoint = true
	return s, nil
}

// resolve checks target and turns it into the transport's address form.
// Mistakes a hurried user makes fail here at once, naming the target,
// rather than after a connect timeout.
func (ep *Endpoint) resolve(target string) (netip.AddrPort, error) {
	bad := func(format string, args ...any) error {
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("dial %q: ", target) + fmt.Sprintf(format, args...)}
	}
	scheme, rest := splitTarget(target)
	if !strings.Contains(target, "://") {
		scheme = ep.scheme // an address of the endpoint's own transport
	}
	switch {
	case target == "":
		return netip.AddrPort{}, bad("empty target (want host:port, mem://name or shm:///path)")
	case ep.scheme != "" && scheme != ep.scheme:
		return netip.AddrPort{}, bad("this endpoint speaks %s://, not %s://: dial from an endpoint of that transport (erpc.Dial opens one)", ep.scheme, scheme)
	case rest == "":
		return netip.AddrPort{}, bad("no address after %s://", scheme)
	case ep.scheme == "udp":
		host, port, err := net.SplitHostPort(rest)
		if err != nil || host == "" || port == "0" || port == "" {
			return netip.AddrPort{}, bad("want host:port with a host and a nonzero port")
		}
	case ep.scheme == "shm":
		if _, err := os.Stat(rest); err != nil {
			return netip.AddrPort{}, &Error{Code: Unavailable, Msg: fmt.Sprintf("dial %q: no endpoint listens there: %v", target, err), Cause: err}
		}
	}
	var addr netip.AddrPort
	var err error
	if r, ok := ep.tr.(interface {
		Resolve(string) (netip.AddrPort, error)
	}); ok {
		addr, err = r.Resolve(rest)
	} else {
		addr, err = netip.ParseAddrPort(rest)
	}
	if err != nil {
		return addr, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("dial %q: %v", target, err), Cause: err}
	}
	return addr, nil
}

// Addr is the server's address.
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
	if s.ep.onLoop() {
		s.closeOnLoop(s.ep.loop.now)
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
	s.sid = s.ep.eng.Connect(now, s.addr)
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
	s.live = false
	s.lastErr = err
	s.failures++
	if s.failures > 1 {
		d := min(10*time.Millisecond<<min(s.failures-2, 10), time.Second)
		d = d/2 + rand.N(d)
		s.nextAttempt = now.Add(d)
	}
	s.firstOnce.Do(func() {
		e := engineError(err)
		msg := e.Msg
		switch {
		case errors.Is(err, proto.ErrPeerGone):
			msg = "no endpoint accepts connections there"
		case errors.Is(err, proto.ErrConnectTimeout):
			msg = "no answer within the failure timeout: nothing listens there, or the network drops what we send"
		}
		s.firstErr = &Error{Code: e.Code, Msg: fmt.Sprintf("dial %q: %s", s.target, msg), Cause: e.Cause}
		close(s.first)
	})
}

// detach forgets engine session sid, which has ended (its down event is
// still queued), so the next call reconnects at once. It must never be
// given a session the engine still has: that one would stay open, on both
// ends, with nothing left to close it.
func (s *Session) detach(sid proto.SessionID, err error) {
	if s.live && s.sid == sid {
		delete(s.ep.loop.sessions, sid)
		s.live = false
		s.lastErr = err
	}
}

// closeOnLoop closes the engine session; its calls fail.
func (s *Session) closeOnLoop(now proto.Time) {
	if s.live {
		_ = s.ep.eng.Close(now, s.sid)
	}
}
