package erpc

import (
	"errors"

	"github.com/erpc-go/erpc/internal/seal"
	"github.com/erpc-go/erpc/internal/secure"
	"github.com/erpc-go/erpc/transport"
)

// What a server spends on clients it knows nothing about yet. An
// association is made only for a client's first Initial that is padded,
// opens and starts a ClientHello (admitInitial): garbage costs a key
// derivation, not one of the maxHandshakes slots. Until the client proves
// its address (a Handshake packet from it opens), the server sends it at
// most ampFactor times the bytes it received from it (tlsSendHandshake),
// so a forged source address buys little amplification. And an
// association whose handshake completed but whose client never opened a
// session is held a short while (the sweep) and at most
// maxSessionless of them: past that, the oldest is forgotten.

// ampFactor is QUIC's anti-amplification limit.
const ampFactor = 3

// maxSessionless bounds the server associations established without an
// engine session yet.
const maxSessionless = maxHandshakes

// admitInitial reports whether data, an Initial for an ID the server does
// not know, may start an association; the rest are dropped and counted:
// as open failures if they do not authenticate, as for no association
// otherwise (too short, or not a ClientHello's start).
func (l *tlsLayer) admitInitial(data []byte) bool {
	err := secure.CheckFirstInitial(data, l.cfg.MaxDatagram)
	switch {
	case err == nil:
		return true
	case errors.Is(err, secure.ErrNotFirstInitial):
		l.stats.unknown++
	default:
		l.stats.openFailures++
	}
	return false
}

// tlsSendHandshake sends a handshake's datagrams to its peer: all of
// them to a server, or to a client whose address is validated; to one
// that is not, what its budget allows, the rest kept to go first as the
// client's next packets raise it (its copies of a flight while part of
// ours waits are not answered again; a close replaces what waits).
func (ep *Endpoint) tlsSendHandshake(t *tlsAssoc, out [][]byte) {
	if t.sess != nil || t.a.PeerValidated() {
		for _, d := range append(t.unsent, out...) {
			ep.extra = append(ep.extra, transport.Message{To: t.addr, Head: d})
		}
		t.unsent = nil
		return
	}
	if len(out) > 0 && (len(t.unsent) == 0 || t.a.Err() != nil) {
		t.unsent = out
	}
	for len(t.unsent) > 0 && t.sentBytes+uint64(len(t.unsent[0])) <= ampFactor*t.rcvdBytes {
		d := t.unsent[0]
		t.unsent = t.unsent[1:]
		t.sentBytes += uint64(len(d))
		ep.extra = append(ep.extra, transport.Message{To: t.addr, Head: d})
	}
	if len(t.unsent) == 0 {
		t.unsent = nil
	}
}

// noteReceived counts the bytes a server association's client sent, its
// sending budget until its address is validated.
func (t *tlsAssoc) noteReceived(data []byte, level seal.Level) {
	if t.sess == nil && level != seal.LevelApplication {
		t.rcvdBytes += uint64(len(data))
	}
}

// sessionUp notes that association tag's client opened its engine
// session: it no longer counts against maxSessionless.
func (l *tlsLayer) sessionUp(tag uint64) {
	if t := l.byID[tag]; t != nil && t.sess == nil && t.up && !t.hasSession {
		t.hasSession = true
		l.sessionless--
	}
}

// established notes a server association's completed handshake: it
// counts against maxSessionless until its client opens a session, and
// past the bound the oldest such association is forgotten.
func (l *tlsLayer) established(t *tlsAssoc) {
	l.sessionless++
	if l.sessionless <= maxSessionless {
		return
	}
	var oldestID uint64
	var oldest *tlsAssoc
	for id, o := range l.byID {
		if o != t && o.sess == nil && o.up && !o.hasSession && !o.offLoop() && (oldest == nil || o.lastActive < oldest.lastActive) {
			oldestID, oldest = id, o
		}
	}
	if oldest != nil {
		l.forget(oldestID, oldest)
	}
}
