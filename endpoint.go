package erpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/wire"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/memnet"
	"github.com/erpc-go/erpc/transport/shm"
	"github.com/erpc-go/erpc/transport/udp"
)

// Endpoint is one event loop with one transport: it serves the handlers
// registered on it and carries the client sessions dialed from it. One
// goroutine owns all of its protocol state; other goroutines hand it work
// through a queue. Run several endpoints to use several cores.
type Endpoint struct {
	opts  options
	tr    transport.Transport
	eng   *proto.Engine // owned by the loop
	start time.Time
	log   *slog.Logger

	cmds     cmdQueue
	sleeping atomic.Bool // the loop is (about to be) in tr.Wait

	handlers atomic.Pointer[handlerTable]
	regMu    sync.Mutex // serializes registrations
	workers  *workerPool

	state    atomic.Int32 // open, draining, closed
	loopDone chan struct{}
	closeErr error

	// Owned by the loop.
	loop loopState
}

const (
	stateOpen int32 = iota
	stateDraining
	stateClosed
)

// Listen opens an endpoint on addr and starts its event loop. addr is
// "host:port" or "udp://host:port" for UDP (port 0 picks one),
// "mem://name" for the process-wide in-memory network (memnet.Default), or
// "shm:///path/to/socket" for shared memory between processes of one host
// ("shm://" for a client-only endpoint). WithTransport supplies any other
// transport.
func Listen(addr string, opt ...Option) (*Endpoint, error) {
	o := defaultOptions()
	for _, f := range opt {
		f(&o)
	}
	o.resolve()
	tr := o.transport
	if tr == nil {
		var err error
		if tr, err = openTransport(addr, &o); err != nil {
			return nil, err
		}
	}
	if o.loss > 0 {
		tr = transport.Lossy(tr, o.loss, uint64(time.Now().UnixNano()))
	}
	return newEndpoint(tr, o), nil
}

func openTransport(addr string, o *options) (transport.Transport, error) {
	scheme, rest, found := strings.Cut(addr, "://")
	if !found {
		scheme, rest = "udp", addr
	}
	switch scheme {
	case "udp":
		return udp.Listen(rest, udp.Options{SocketBuffer: o.sockBuf})
	case "mem":
		return memnet.Default().Listen(rest)
	case "shm":
		return shm.Listen(rest, shm.Options{})
	}
	return nil, fmt.Errorf("erpc: unknown transport %q in address %q (want udp://, mem:// or shm://)", scheme, addr)
}

func newEndpoint(tr transport.Transport, o options) *Endpoint {
	cfg := o.engine
	if cfg.MaxPacketSize <= 0 {
		cfg.MaxPacketSize = 1472
		if ps, ok := tr.(transport.PacketSizer); ok {
			cfg.MaxPacketSize = ps.PacketSize()
		}
	}
	// The wire format carries at most 64 KiB of data per packet.
	cfg.MaxPacketSize = min(cfg.MaxPacketSize, tr.MaxDatagram(), wire.HeaderLen+0xFFFF)
	ep := &Endpoint{
		opts:     o,
		tr:       tr,
		eng:      proto.New(cfg),
		start:    time.Now(),
		log:      o.logger,
		loopDone: make(chan struct{}),
	}
	ep.handlers.Store(&handlerTable{})
	ep.workers = newWorkerPool(ep, o.workers, o.queue)
	ep.loop.init()
	go ep.run()
	return ep
}

// Addr is the address other endpoints dial to reach this one.
func (ep *Endpoint) Addr() netip.AddrPort { return ep.tr.LocalAddr() }

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
		ep.failCommand(c)
	}
}

// enqueue queues c for the loop and wakes it if it sleeps; false if the
// loop has stopped.
func (ep *Endpoint) enqueue(c command) bool {
	if !ep.cmds.push(c) {
		return false
	}
	if ep.sleeping.Load() {
		ep.tr.Wake()
	}
	return true
}

// Post runs fn on the endpoint's event loop, after the work already handed
// to it, on the goroutine that also runs foreground handlers and call
// continuations: state that only fn, those handlers and continuations touch
// needs no lock. fn must not block. Post returns an Unavailable error, and
// fn does not run, once the endpoint has closed; fn is also dropped if the
// endpoint closes before the loop reaches it.
func (ep *Endpoint) Post(fn func()) error {
	if fn == nil {
		return errors.New("erpc: Post of a nil function")
	}
	if !ep.enqueue(command{kind: cmdFunc, fn: fn}) {
		return errClosed
	}
	return nil
}

// Close stops the endpoint at once: pending calls fail with Unavailable,
// requests being handled are abandoned (their responses are dropped), the
// transport closes, and Close returns when every goroutine of the endpoint
// has exited. Use Shutdown to let calls finish first.
func (ep *Endpoint) Close() error {
	if ep.state.Swap(stateClosed) != stateClosed {
		ep.post(command{kind: cmdStop})
	}
	<-ep.loopDone
	return ep.closeErr
}

// Shutdown stops accepting new calls and requests, waits until the calls in
// flight (both the ones this endpoint makes and the ones it serves) have
// completed or ctx ends, then closes the endpoint. It returns ctx's error if
// it had to cut calls short.
func (ep *Endpoint) Shutdown(ctx context.Context) error {
	ep.state.CompareAndSwap(stateOpen, stateDraining)
	var err error
	for !ep.drained() {
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

// drained asks the loop whether any call or request is still in flight.
func (ep *Endpoint) drained() bool {
	reply := make(chan bool, 1)
	ep.post(command{kind: cmdFunc, fn: func() {
		st := ep.eng.Stats()
		reply <- st.PendingCalls == 0 && st.HeldRequests == 0 && ep.workers.idle()
	}})
	select {
	case ok := <-reply:
		return ok
	case <-ep.loopDone:
		return true
	}
}

// Stats is a snapshot of an endpoint's protocol counters.
type Stats = proto.Stats

// Stats returns the endpoint's protocol counters and gauges.
func (ep *Endpoint) Stats() Stats {
	reply := make(chan Stats, 1)
	ep.post(command{kind: cmdFunc, fn: func() { reply <- ep.eng.Stats() }})
	select {
	case st := <-reply:
		return st
	case <-ep.loopDone:
		return Stats{}
	}
}

// errClosed is the error of calls on a closed endpoint.
var errClosed = &Error{Code: Unavailable, Msg: "endpoint closed", Cause: transport.ErrClosed}
