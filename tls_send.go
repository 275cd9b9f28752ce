package erpc

import (
	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/seal"
	"github.com/erpc-go/erpc/transport"
)

// tlsSeal appends to msgs the engine's packets sealed by the
// associations their tags name, into the layer's arena (reused: a steady
// stream of calls allocates nothing). A packet of a client association
// still handshaking is held (it is the connect) and the handshake's
// flight goes instead: the engine's connect timer is the handshake's
// retransmission timer. A packet of no established association is
// dropped: nothing leaves a TLS endpoint in the clear but the refusals.
func (ep *Endpoint) tlsSeal(now proto.Time, pkts []proto.Packet, msgs []transport.Message) []transport.Message {
	l := ep.sec
	l.sweep(now, false)
	l.flushes++
	need := 0
	for i := range pkts {
		need += pkts[i].Len() + seal.Overhead
	}
	if cap(l.arena) < need {
		l.arena = make([]byte, 0, need+need/4)
	}
	arena := l.arena[:0]
	for i := range pkts {
		p := &pkts[i]
		t := l.byID[p.Tag]
		if t == nil || t.failed {
			continue
		}
		if t.busy { // off the loop: the packet waits, as a connect does, for its timer
			if t.sess != nil && !t.up {
				t.held = p.AppendTo(t.held[:0])
				t.heldPath = p.Path
			}
			continue
		}
		if !t.up {
			if t.sess != nil { // a client's connect: hold it, send the flight
				t.held = p.AppendTo(t.held[:0])
				t.heldPath = p.Path
				t.a.Resend()
				ep.tlsProgress(now, t)
			}
			continue
		}
		if t.sess != nil && !t.a.Confirmed() {
			t.a.Resend() // our Finished, until the server proves it has it
			ep.tlsProgress(now, t)
		}
		if ep.tlsForceUpdate && t.forcedAt != l.flushes { // once per association, not per packet
			t.forcedAt = l.flushes
			t.a.UpdateKey()
		}
		start := len(arena)
		body := arena[start+seal.HeaderLen : start+seal.HeaderLen]
		body = append(append(body, p.Head()...), p.Payload...)
		sealed := t.a.SealApp(arena[start:start], body)
		arena = arena[:start+len(sealed)]
		l.noteKeys(t)
		msgs = append(msgs, transport.Message{To: p.To, Head: sealed, Path: p.Path})
	}
	ep.tlsForceUpdate = false
	l.arena = arena[:0]
	return msgs
}

// noteKeys counts the key updates t's sealer made or its opener followed.
func (l *tlsLayer) noteKeys(t *tlsAssoc) {
	s, r := t.a.KeyGenerations()
	if s != t.sendGen || r != t.recvGen {
		l.stats.keyUpdates += s - t.sendGen + r - t.recvGen
		t.sendGen, t.recvGen = s, r
	}
}

// tlsStatsInto adds the layer's counters to st.
func (l *tlsLayer) statsInto(st *proto.Stats) {
	st.TLSHandshakes = l.stats.handshakes
	st.TLSHandshakeFailures = l.stats.failures
	st.TLSOpenFailures = l.stats.openFailures
	st.TLSReplays = l.stats.replays
	st.TLSPlaintextDropped = l.stats.plaintext
	st.TLSUnknownAssoc = l.stats.unknown
	st.TLSKeyUpdates = l.stats.keyUpdates
}
