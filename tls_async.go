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

// tlsStepAsync hands handshake packet data, with header h, to t's
// association on a goroutine; tlsStepDone takes the result on the loop.
func (ep *Endpoint) tlsStepAsync(t *tlsAssoc, h seal.Header, data []byte) {
	t.busy = true
	pkt := bytes.Clone(data)
	go func() {
		err := t.a.Receive(&h, pkt)
		if !ep.enqueue(command{kind: cmdFunc, fn: func() { ep.tlsStepDone(t, err) }}) {
			t.a.Close() // the endpoint stopped meanwhile
		}
	}()
}

// tlsStepDone acts on a handshake step's outcome (err: the packet was
// dropped), then runs the packets that waited for it.
func (ep *Endpoint) tlsStepDone(t *tlsAssoc, err error) {
	t.busy = false
	now := ep.loop.now
	if err != nil {
		ep.sec.countDrop(err)
	} else {
		t.lastActive = now
		ep.tlsProgress(now, t)
	}
	for len(t.backlog) > 0 && !t.busy {
		q := t.backlog[0]
		t.backlog = t.backlog[1:]
		ep.tlsReceive(q.from, q.data)
	}
	if len(t.backlog) == 0 {
		t.backlog = nil
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
