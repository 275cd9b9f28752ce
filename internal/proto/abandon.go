package proto

import (
	"net/netip"
	"slices"

	"github.com/erpc-go/erpc/internal/wire"
)

// maxAbandoned bounds how many abandoned connects a client engine
// remembers (abandonedConnect): past it, the oldest is forgotten, and the
// server's session for it, if any, lasts until the server reaps it.
const maxAbandoned = 64

// abandonedConnect is a client session closed while its connect was on
// its way (Close before the connect-ack: a dial that lost the race to
// another address, or whose context ended). The server may have accepted
// the connect and opened a session that nothing will ever use; the client
// cannot end it, for only the connect-ack carries the server's session
// number and token. So the client remembers the connect for a failure
// timeout (the longest it would have waited for that ack), and answers an
// ack that comes late with a disconnect, which ends the server's session
// at once instead of at its idle timeout.
type abandonedConnect struct {
	peer  netip.AddrPort
	num   uint32 // the closed session's number and token, as the ack echoes them
	token uint32
	until Time
}

// abandonConnect remembers connecting session s, which is being closed.
// It runs on Close, never on the data path; the record's memory is
// allocated once and reused.
func (e *Engine) abandonConnect(now Time, s *session) {
	e.abandoned = slices.DeleteFunc(e.abandoned, func(a abandonedConnect) bool { return a.until <= now })
	if len(e.abandoned) >= maxAbandoned {
		e.abandoned = slices.Delete(e.abandoned, 0, 1) // the oldest goes
	}
	e.abandoned = append(e.abandoned, abandonedConnect{peer: s.peer, num: s.num, token: s.token,
		until: now.Add(e.cfg.FailureTimeout)})
}

// answerAbandoned handles a packet from from that no client session takes:
// if it is the connect-ack of an abandoned connect, still remembered, it
// tells the server to end the session it opened (a disconnect carrying
// the server's number and token, which the ack gave) and forgets the
// connect. It reports whether it sent the disconnect.
func (e *Engine) answerAbandoned(now Time, from netip.AddrPort, h *wire.Header, payload []byte) bool {
	if len(e.abandoned) == 0 || h.Type != wire.TypeConnectAck || h.Code != wire.CodeOK {
		return false
	}
	i := slices.IndexFunc(e.abandoned, func(a abandonedConnect) bool {
		return a.num == h.Session && a.token == h.Token && a.peer == from
	})
	if i < 0 {
		return false
	}
	a := e.abandoned[i]
	e.abandoned = slices.Delete(e.abandoned, i, i+1)
	var c wire.Connect
	if a.until <= now || c.Parse(payload) != nil || c.Token == 0 {
		return false
	}
	// A session of ours that took the number over and talks to the same
	// server may be confirmed there under that number: the disconnect
	// would confirm the abandoned session in its place, which ends the
	// live one. Leave the abandoned one to the server's reaping instead.
	if live := e.lookup(a.num); live != nil && live.peer == from {
		return false
	}
	d := wire.Header{Type: wire.TypeDisconnect, Session: c.Session, Token: c.Token}
	e.emit(from, &d, nil)
	return true
}
