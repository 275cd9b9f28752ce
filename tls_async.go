package erpc

import (
	"bytes"
	"net/netip"

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
	t.busy = true
	go func() {
		dropped := make([]error, 0, len(batch))
		for _, q := range batch {
			h, err := seal.ParseHeader(q.data)
			if err == nil {
				err = t.a.Receive(&h, q.data)
			}
			if err != nil {
				dropped = append(dropped, err)
			}
		}
		if !ep.enqueue(command{kind: cmdFunc, fn: func() { ep.tlsStepDone(t, dropped, len(batch)) }}) {
			t.a.Close() // the endpoint stopped meanwhile
		}
	}()
}

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
		if !t.busy {
			l.forget(id, t)
		}
	}
}
