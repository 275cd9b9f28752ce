package erpc

import (
	"bytes"
	"fmt"
	"net/netip"
	"runtime/debug"

	"github.com/erpc-go/erpc/internal/seal"
)

// A handshake's steps run off the event loop: crypto/tls signs, verifies
// chains and calls the user's verification callbacks there, which may
// take milliseconds (an RSA signature, a callback that looks something
// up), and the loop serves every other session meanwhile. One step at a
// time per association, on a goroutine of its own; the loop does not
// touch the association until the step's result comes back through its
// command queue, and the packets that arrive for it meanwhile wait in a
// small backlog, in order. Once a handshake is established, what is left
// of its packets (a copy of a flight, a close) is handled on the loop:
// crypto/tls has no more work to do.

// maxBacklog bounds the packets an association keeps while its step
// runs; more are dropped (the client's timer sends them again).
const maxBacklog = 32

type queuedPacket struct {
	from netip.AddrPort
	data []byte
}

func (t *tlsAssoc) queue(from netip.AddrPort, data []byte) {
	if len(t.backlog) < maxBacklog {
		t.backlog = append(t.backlog, queuedPacket{from, bytes.Clone(data)})
	}
}

// tlsStartSteps starts, after a batch of datagrams, a handshake step for
// each association that received handshake packets in it: the whole of
// a flight that came in one batch is one step, one goroutine hand-off.
func (ep *Endpoint) tlsStartSteps() {
	l := ep.sec
	for i, t := range l.starting {
		l.starting[i] = nil
		t.starting = false
		if !t.busy && len(t.backlog) > 0 {
			ep.tlsStepAsync(t)
		}
	}
	l.starting = l.starting[:0]
}

// tlsStepAsync hands t's waiting packets to its association on a
// goroutine, in order; tlsStepDone takes the result on the loop. Only
// handshake packets are stepped there: from the first other one on
// (an Application packet, which may follow the handshake's completion)
// the rest wait for the loop.
func (ep *Endpoint) tlsStepAsync(t *tlsAssoc) {
	n := 0
	for n < len(t.backlog) && t.backlog[n].data[1]&3 != uint8(seal.LevelApplication) {
		n++
	}
	if n == 0 {
		ep.tlsDrainBacklog(t)
		return
	}
	batch := t.backlog[:n:n]
	t.backlog = t.backlog[n:]
	dropped := make([]error, 0, len(batch))
	ep.tlsOffLoop(t, func() {
		for _, q := range batch {
			h, err := seal.ParseHeader(q.data)
			if err == nil {
				err = t.a.Receive(&h, q.data)
			}
			if err != nil {
				dropped = append(dropped, err)
			}
		}
		t.a.SendTicket() // a server just established: its ticket calls WrapSession
	}, func() { ep.tlsStepDone(t, dropped, len(batch)) })
}

// tlsStartClient starts a dialing association's handshake off the loop:
// its ClientHello may call the config's ClientSessionCache.Get. The
// engine's connect is held meanwhile (tlsSeal), and the flight goes out
// when the step is done.
func (ep *Endpoint) tlsStartClient(tag uint64) {
	if t := ep.sec.byID[tag]; t != nil {
		ep.tlsOffLoop(t, func() { _ = t.a.Start() }, func() { ep.tlsStepDone(t, nil, 0) })
	}
}

// tlsOffLoop runs work with t on a goroutine (t is busy meanwhile: the
// loop leaves it alone), then done on the loop. A panic in work (erpc's
// own code: the config's callbacks recover theirs, secure.Guard) fails
// the handshake rather than the process.
func (ep *Endpoint) tlsOffLoop(t *tlsAssoc, work, done func()) {
	t.busy = true
	go func() {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.a.Fail(fmt.Errorf("internal error in the TLS handshake: %v", p))
					ep.log.Error(fmt.Sprintf("erpc: TLS handshake step panicked: %v\n%s", p, debug.Stack()))
				}
			}()
			work()
		}()
		if !ep.enqueue(command{kind: cmdFunc, fn: done}) {
			t.a.Close() // the endpoint stopped meanwhile
		}
	}()
}

// maxTickets bounds the session tickets a client association keeps
// waiting while one is stored; more are dropped (a ticket is an
// optimisation: the next handshake is then a full one).
const maxTickets = 4

// tlsTicket stores a session ticket (plain, an opened Application packet)
// off the loop: crypto/tls calls the config's ClientSessionCache.Put.
// Unlike a handshake step, the association stays usable meanwhile:
// ReceiveAppCrypto touches the ticket's state only. One at a time.
func (ep *Endpoint) tlsTicket(t *tlsAssoc, plain []byte) {
	if t.ticketing {
		if len(t.tickets) < maxTickets {
			t.tickets = append(t.tickets, bytes.Clone(plain))
		}
		return
	}
	t.ticketing = true
	plain = bytes.Clone(plain)
	go func() {
		func() {
			defer func() { _ = recover() }() // the cache's panics are recovered by secure.Guard; this is erpc's own
			_ = t.a.ReceiveAppCrypto(plain)
		}()
		if !ep.enqueue(command{kind: cmdFunc, fn: func() { ep.tlsTicketDone(t) }}) {
			t.a.Close()
		}
	}()
}

func (ep *Endpoint) tlsTicketDone(t *tlsAssoc) {
	t.ticketing = false
	if len(t.tickets) > 0 {
		next := t.tickets[0]
		t.tickets = t.tickets[1:]
		ep.tlsTicket(t, next)
	}
}

// offLoop reports whether a goroutine works on t: the sweep leaves it.
func (t *tlsAssoc) offLoop() bool { return t.busy || t.ticketing }

// tlsStepDone acts on a handshake step's outcome (dropped: the packets
// it dropped, of n), then runs the packets that waited for it.
func (ep *Endpoint) tlsStepDone(t *tlsAssoc, dropped []error, n int) {
	t.busy = false
	for _, err := range dropped {
		ep.sec.countDrop(err)
	}
	if len(dropped) < n {
		t.lastActive = ep.loop.now
	}
	ep.tlsProgress(ep.loop.now, t)
	ep.tlsDrainBacklog(t)
}

// tlsDrainBacklog runs t's waiting packets through the loop's receive
// path (which queues handshake ones again, for a step of their own).
func (ep *Endpoint) tlsDrainBacklog(t *tlsAssoc) {
	backlog := t.backlog
	t.backlog = nil
	for _, q := range backlog {
		if t.busy || t.starting {
			t.backlog = append(t.backlog, q) // keep the order behind a step
			continue
		}
		ep.tlsReceive(q.from, q.data)
	}
	if len(ep.sec.starting) > 0 {
		ep.tlsStartSteps()
	}
}

// closeAll ends every association when the endpoint stops (crypto/tls
// keeps a goroutine per unfinished handshake). One whose step is still
// running is closed by that step's goroutine.
func (l *tlsLayer) closeAll() {
	for id, t := range l.byID {
		if !t.offLoop() {
			l.forget(id, t)
		}
	}
}
