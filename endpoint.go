package erpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/seal"
	"github.com/erpc-go/erpc/internal/wire"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/memnet"
	"github.com/erpc-go/erpc/transport/shm"
	"github.com/erpc-go/erpc/transport/udp"
)

// Endpoint is one event loop with one transport: it serves the handlers
// of the Server it was opened by (if any) and carries the client sessions
// dialed from it. One goroutine owns all of its protocol state; other
// goroutines hand it work through a queue. Run several endpoints to use
// several cores.
type Endpoint struct {
	opts   options
	server *Server // nil: serves nothing
	tr     transport.Transport
	scheme string // "udp", "tcp", "mem" or "shm"; "" for WithTransport
	target string // what to Dial to reach this endpoint; "" if it cannot be dialed
	eng    *proto.Engine
	start  time.Time
	log    *slog.Logger

	cmds     cmdQueue
	sleeping atomic.Bool // the loop is (about to be) in tr.Wait

	handlers        *handlerTable // nil: serves nothing
	clientIntercept UnaryClientInterceptor
	workers         *workerPool
	reqReturned     returnedRequests

	state    atomic.Int32 // open, draining, closed
	loopDone chan struct{}
	closeErr error

	watch   loopWatch // read by other goroutines: is the loop in user code, since when, which
	streams streamHub // the streams served and opened here (stream_hub.go); the loop's, but its counters
	// Owned by the loop.
	loop  loopState
	sec   *tlsLayer           // WithTLS: the associations (tls_layer.go); nil for plaintext
	extra []transport.Message // datagrams to send besides the engine's: handshakes, refusals
	// tlsForceUpdate makes the next flush update every association's
	// sending key (a test's hook: key updates are due only after 2^22
	// packets).
	tlsForceUpdate bool
}

const (
	stateOpen int32 = iota
	stateDraining
	stateClosed
)

// Listen opens an endpoint that only makes calls: it dials sessions to
// servers and refuses sessions other endpoints ask for. To serve, register
// handlers on a Server and use Server.Listen.
//
// addr is "host:port" or "udp://host:port" for UDP (port 0 picks one;
// ":0" is a client's usual choice), "tcp://host:port" for TCP ("tcp://"
// for a client-only endpoint), "mem://name" for the process-wide
// in-memory network (memnet.Default), or "shm:///path/to/socket" for
// shared memory between processes of one host ("shm://" for a client-only
// endpoint). WithTransport supplies any other transport, and addr is then
// ignored.
func Listen(addr string, opt ...Option) (*Endpoint, error) {
	return listen(addr, nil, opt)
}

func listen(addr string, srv *Server, opt []Option) (*Endpoint, error) {
	o := defaultOptions()
	for _, f := range opt {
		f(&o)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := checkServePolicy(addr, srv, &o); err != nil {
		return nil, err
	}
	if err := checkServerTLS(addr, srv, &o); err != nil {
		return nil, err
	}
	o.resolve()
	tr, scheme := o.transport, ""
	if tr == nil {
		if srv != nil && addr == "shm://" {
			return nil, &Error{Code: InvalidArgument, Msg: `serve on "shm://": with no socket path an shm endpoint is client-only, ` +
				`and no client could reach it: give the path, as in "shm:///run/app.sock"`}
		}
		var err error
		if tr, err = openTransport(addr, &o, srv == nil); err != nil {
			return nil, err
		}
		scheme, _ = splitTarget(addr)
	} else if t, ok := tr.(transport.Targeter); ok && srv != nil && t.Target() == "" {
		return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("serve on a %T that cannot be dialed (a client-only one): "+
			"no client could reach it", tr)} // t stays the caller's
	}
	return newEndpoint(tr, scheme, srv, o), nil
}

// splitTarget separates an address's scheme ("udp" if none) from the rest.
func splitTarget(addr string) (scheme, rest string) {
	if s, r, ok := strings.Cut(addr, "://"); ok {
		return s, r
	}
	return "udp", addr
}

// openTransport opens the transport addr names; clientOnly says the
// endpoint will refuse sessions (which lets a UDP socket connect to its
// one server: udp.Options.ClientOnly).
func openTransport(addr string, o *options, clientOnly bool) (transport.Transport, error) {
	scheme, rest := splitTarget(addr)
	switch scheme {
	case "udp":
		if _, _, err := net.SplitHostPort(rest); err != nil {
			return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("listen on %q: want host:port (port 0 picks one)", addr), Cause: err}
		}
		u, err := udp.Listen(rest, udp.Options{SocketBuffer: o.sockBuf, Paths: o.paths, ClientOnly: clientOnly, Network: o.udpNetwork})
		if err != nil {
			return nil, openError(addr, err)
		}
		return u, nil
	case "mem":
		m, err := memnet.Default().ListenPaths(rest, o.paths)
		if err != nil {
			return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("listen on %q: %v", addr, err), Cause: err}
		}
		return m, nil
	case "shm":
		s, err := shm.Listen(rest, shm.Options{})
		if err != nil {
			return nil, openError(addr, err)
		}
		return s, nil
	case "tcp":
		return openTCP(addr, rest, clientOnly)
	}
	return nil, &Error{Code: InvalidArgument,
		Msg: fmt.Sprintf("listen on %q: unknown transport %q (want udp://, tcp://, mem:// or shm://)", addr, scheme)}
}

// openError is the error of a transport that did not open: FailedPrecondition
// where this platform or build cannot do what was asked (shm off Linux or
// on a kernel without the seals it needs, several UDP paths off Linux),
// which trying again will not change; InvalidArgument for a host name
// that does not exist, as Dial's (lookupError); Unavailable for the rest
// (an address in use, a resolver that could not answer), which may pass.
func openError(addr string, err error) *Error {
	code := Unavailable
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, shm.ErrNotSupported) || errors.Is(err, udp.ErrNotSupported):
		code = FailedPrecondition
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound: // a name that does not exist, as Dial says (lookupError)
		code = InvalidArgument
	}
	return &Error{Code: code, Msg: fmt.Sprintf("listen on %q: %v", addr, err), Cause: err}
}

// targetOf is the transport's dialable address, and its scheme if scheme
// is not known already, when the transport says (transport.Targeter).
func targetOf(tr transport.Transport, scheme string) (string, string) {
	var target string
	if t, ok := tr.(transport.Targeter); ok {
		target = t.Target()
	}
	if s, _, ok := strings.Cut(target, "://"); ok && scheme == "" {
		scheme = s
	}
	return target, scheme
}

// maxPacketData is the most data a packet carries, the largest multiple
// of 64 the wire format allows (64 KiB less 64 bytes): each packet of a
// large message then starts on a cache line of the message buffers at
// both ends, so the copies into and out of them take memmove's fastest
// path (REP MOVS wants a line-aligned destination). With 65,535 bytes
// (the wire's limit), most packets of a message over shm started mid-line,
// and the receiver's copy out of the ring ran about a tenth slower
// (docs/benchmarks/shm.md, 2026-11-26: copies per byte).
const maxPacketData = 0xFFC0

func newEndpoint(tr transport.Transport, scheme string, srv *Server, o options) *Endpoint {
	var handlers *handlerTable
	if srv != nil {
		handlers = srv.table
	}
	target, scheme := targetOf(tr, scheme)
	cfg := o.engine
	if cfg.MaxPacketSize <= 0 {
		cfg.MaxPacketSize = 1472
		if ps, ok := tr.(transport.PacketSizer); ok {
			cfg.MaxPacketSize = ps.PacketSize()
		}
	}
	// The wire format carries at most 64 KiB of data per packet; a packet
	// that large carries a whole number of cache lines (maxPacketData).
	cfg.MaxPacketSize = min(cfg.MaxPacketSize, tr.MaxDatagram(), wire.HeaderLen+maxPacketData)
	var sec *tlsLayer
	if o.tlsConfig != nil { // every packet grows by the protection's overhead
		sec = newTLSLayer(&o, cfg.MaxPacketSize)
		cfg.MaxPacketSize -= seal.Overhead
	}
	cfg.NotServing = handlers == nil
	if cfg.Uncongested == nil {
		cfg.Uncongested = uncongested(tr)
	}
	if cfg.Reliable == nil {
		cfg.Reliable = reliable(tr)
	}
	cfg.Paths = 1
	if p, ok := tr.(transport.Pather); ok {
		cfg.Paths = p.Paths()
	}
	ep := &Endpoint{
		server:          srv,
		opts:            o,
		tr:              tr,
		scheme:          scheme,
		target:          target,
		eng:             proto.New(cfg),
		start:           time.Now(),
		log:             o.logger,
		handlers:        handlers,
		loopDone:        make(chan struct{}),
		clientIntercept: chainClient(o.clientInterceptors),
		sec:             sec,
	}
	ep.workers = newWorkerPool(ep, &o)
	ep.loop.init(handlers)
	ep.watch.init()
	go ep.run()
	if handlers == nil {
		ep.opts.handoff = -1 // no handler to hand off: the watchdog only logs stalls
	}
	if o.stall > 0 || ep.opts.handoff > 0 {
		go ep.watchLoop()
	}
	return ep
}

// Addr is the endpoint's address on its transport: for UDP, the address
// peers send to, which is the socket's, or loopback (with the socket's
// port) when it is bound to all interfaces (":0", "0.0.0.0:port",
// "[::]:port"); for the other transports a synthetic one. Use Target to
// dial it.
func (ep *Endpoint) Addr() netip.AddrPort { return ep.tr.LocalAddr() }

// Target is what to pass to Dial to reach this endpoint, with its scheme:
// "udp://127.0.0.1:31850", "mem://name", "shm:///path/to/socket". It is
// empty for an endpoint that cannot be dialed (a client-only shm one), or
// whose transport (WithTransport) does not say (transport.Targeter).
func (ep *Endpoint) Target() string { return ep.target }

// Server is the server whose handlers the endpoint serves, nil for an
// endpoint that only makes calls.
func (ep *Endpoint) Server() *Server { return ep.server }

// now is the engine's clock: monotonic time since the endpoint started.
func (ep *Endpoint) now() proto.Time { return proto.Time(time.Since(ep.start)) }

// wallTime converts an engine time back for the transport's Wait.
func (ep *Endpoint) wallTime(t proto.Time) time.Time {
	if t == proto.Never {
		return time.Time{}
	}
	return ep.start.Add(time.Duration(t))
}

// post hands a command to the loop and wakes it if it sleeps. After the
// loop has stopped, the command is settled here instead.
func (ep *Endpoint) post(c command) {
	if !ep.enqueue(c) {
		ep.failCommand(c, false)
	}
}

// enqueue queues c for the loop and wakes it if it sleeps; false if the
// loop has stopped. A queue that was not empty may mean a loop held up by
// a handler: that is checked, and logged once. The check reads the clock,
// so it is made only when the queue reaches a power of two: a loop that
// is really held sees its queue double again and again, while the
// continuations of a busy loop, which post one call each, do not pay a
// clock read per call (erpc-bench rate, 64 calls in flight).
func (ep *Endpoint) enqueue(c command) bool {
	waiting, ok := ep.cmds.push(c)
	if !ok {
		return false
	}
	if waiting > 1 && waiting&(waiting-1) == 0 {
		ep.checkStall()
	}
	if ep.sleeping.Load() {
		ep.tr.Wake()
	}
	return true
}

// Post runs fn on the endpoint's event loop, after the work already handed
// to it, on the goroutine that also runs call continuations and OnLoop
// handlers: state that only fn, those handlers and continuations touch
// needs no lock. (Other inline handlers hold the loop only until the
// handoff threshold: one that runs longer finishes beside it.) fn must
// not block. Post returns an Unavailable error, and fn does not run, once
// the endpoint has closed; fn is also dropped if the endpoint closes
// before the loop reaches it. An fn that ends its goroutine
// (runtime.Goexit, as t.FailNow does) is logged, and the loop goes on on
// a fresh goroutine with the work queued after fn.
func (ep *Endpoint) Post(fn func()) error {
	if fn == nil {
		return &Error{Code: InvalidArgument, Msg: "Post of a nil function"}
	}
	if !ep.enqueue(command{kind: cmdFunc, fn: fn}) {
		return errClosed
	}
	return nil
}

// Close stops the endpoint at once: pending calls fail with Unavailable,
// requests being handled are abandoned (their responses are dropped, their
// contexts canceled), the transport closes, and Close returns when every
// goroutine of the endpoint has exited, running background handlers
// included. Called from the endpoint's own loop (an inline handler or a
// continuation), Close returns at once and the endpoint stops when that
// handler returns; called from a background handler, it returns once the
// loop has stopped, without waiting for the other background handlers (or
// itself). Use Shutdown to let calls finish first. The continuation of a
// Session.Go call the loop never took runs on a goroutine of its own,
// and may run after Close returns (Session.Go).
func (ep *Endpoint) Close() error {
	if ep.state.Swap(stateClosed) != stateClosed {
		ep.post(command{kind: cmdStop})
	}
	if ep.onLoop() {
		return nil
	}
	ep.checkStall()
	<-ep.loopDone
	if !ep.workers.isWorker() {
		ep.workers.wait()
	}
	return ep.closeErr
}

// Shutdown stops accepting new calls and requests, tells its sessions'
// clients at once that it is draining (Session.Draining: a Client sends
// them no new call from then on), and refuses the requests that still
// come (as never run, so a Client sends them elsewhere) until its clients
// have closed their sessions or none has come for 100 ms (at most 1 s).
// It waits until the calls in
// flight (both the ones this endpoint makes and the ones it serves) have
// completed or ctx ends, then closes the endpoint. It returns ctx's error if
// it had to cut calls short. Called from an inline handler, it hands the
// loop off first (see WithHandoff) and waits as a Background handler (its
// own request's answer then comes after the close: its caller gets
// Unavailable); it
// cannot wait from a continuation, a Post function or an OnLoop handler,
// where it fails at once. Streams are not waited for (they may never
// end): Shutdown ends the ones it serves at once, both sides, with
// Unavailable.
func (ep *Endpoint) Shutdown(ctx context.Context) error {
	if ep.blockingRefused() {
		return errOnLoop("Shutdown", "call Close, or Shutdown from another goroutine")
	}
	if ep.state.CompareAndSwap(stateOpen, stateDraining) {
		ep.post(command{kind: cmdFunc, fn: ep.shutdownStreams}) // streams end now, with Unavailable
		ep.post(command{kind: cmdFunc, fn: func() {
			ep.loop.drainedAt = ep.now()
			ep.eng.Drain(ep.loop.drainedAt)
		}})
	}
	self := ep.workers.isWorker() // a background handler waits for the others
	var err error
	for !ep.drained(self) {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-ep.loopDone:
			return ep.closeErr
		case <-time.After(time.Millisecond):
			continue
		}
		break
	}
	return errors.Join(err, ep.Close())
}

// drained asks the loop whether any call or request is still in flight,
// besides the caller's own request if it is a background handler.
func (ep *Endpoint) drained(self bool) bool {
	reply := make(chan bool, 1)
	held := 0
	if self {
		held = 1
	}
	ep.post(command{kind: cmdFunc, fn: func() {
		st := ep.eng.Stats()
		reply <- st.PendingCalls == 0 && st.HeldRequests <= held && ep.workers.idle(self) && ep.drainQuiet(st)
	}})
	select {
	case ok := <-reply:
		return ok
	case <-ep.loopDone:
		return true
	}
}

// Shutdown lingers after telling its clients it drains: until they have
// all closed their sessions (a Client closes one when its calls there
// are done), or no request has reached it for drainQuiet, or for at most
// drainLinger. A request a client sent before it heard is then refused
// as never run (and goes to another server) rather than cut off by the
// close, whose notice cannot always say that it never ran.
const (
	drainQuiet  = 100 * time.Millisecond
	drainLinger = time.Second
)

// drainQuiet reports whether Shutdown may close (on the loop): its
// clients have left or stopped sending, or it has waited long enough.
func (ep *Endpoint) drainQuiet(st proto.Stats) bool {
	now := ep.now()
	quietSince := max(ep.loop.lastRefusal, ep.loop.drainedAt) // the notice had to reach them
	return st.ServerSessions == 0 || now.Sub(quietSince) >= drainQuiet || now.Sub(ep.loop.drainedAt) >= drainLinger
}

// Stats returns the endpoint's protocol counters and gauges. From the
// endpoint's own loop it reads them directly.
func (ep *Endpoint) Stats() Stats {
	if g, ok := ep.pinLoop(); ok {
		st := statsFrom(ep.engineStats())
		ep.unpinLoop(g)
		return st
	}
	reply := make(chan proto.Stats, 1)
	ep.post(command{kind: cmdFunc, fn: func() { reply <- ep.engineStats() }})
	select {
	case st := <-reply:
		return statsFrom(st)
	case <-ep.loopDone:
		return Stats{}
	}
}

// engineStats is the engine's counters with the TLS layer's (on the loop).
func (ep *Endpoint) engineStats() proto.Stats {
	st := ep.eng.StatsAt(ep.now())
	if ep.sec != nil {
		ep.sec.statsInto(&st)
	}
	return st
}

// errClosed is the error of calls on a closed endpoint; errCallClosed,
// of a call the closed endpoint never sent (NotExecuted).
var (
	errClosed     = &Error{Code: Unavailable, Msg: "endpoint closed", Cause: transport.ErrClosed}
	errCallClosed = notRunCopy(errClosed)
)

// errOnLoop is the error of a blocking call made on the endpoint's own
// loop, which could never complete.
func errOnLoop(what, fix string) *Error {
	return &Error{Code: FailedPrecondition, Msg: what + " on the endpoint's own event loop (from a Session.Go continuation, " +
		"a Post function or an OnLoop handler) would wait for that loop forever: " + fix}
}
