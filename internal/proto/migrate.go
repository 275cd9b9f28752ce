package proto

import (
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// Connection migration. A client's address can change under a live
// session: a NAT rebinds, a multihomed host switches interfaces, a
// container moves. The client does not know; the server sees packets
// with the session's number and token from a new IP. Resetting would fail
// calls whose handlers may have run, and obeying would let anyone who
// forges a source address redirect the session's answers. So the server
// proves the new address first, as QUIC does: it sends a random nonce
// there (TypePathChallenge) and moves the session only when the client
// answers from that address with the nonce and its own token
// (TypePathResponse). Until then packets from the new address are dropped
// and counted, unexecuted and unanswered: the client resends them, and
// the resends land once the session has moved.
//
// A change of port alone needs none of this: a server session takes its
// client's packets from any port of the client's IP (multipath clients
// spray over several source ports) and answers each where it came from.

// challengeGap is the least time between two challenges of one session:
// a new address's packets trigger at most one challenge per gap, and an
// outstanding challenge gives way to one for another address only after
// it (an attacker cannot pin the slot, the client's resends retry it).
const challengeGap = time.Millisecond

// pathProbe is a server session's one outstanding path challenge. It is
// allocated the first time the session's client shows up from a new
// address, so sessions that never move do not pay for it.
type pathProbe struct {
	addr  netip.AddrPort // the address last challenged; any port of its IP may answer
	nonce uint64         // what the answer must echo; 0: none outstanding
	// sent is when the session's last challenge left, answered or not:
	// the gap runs from it (once is true) even after a migration.
	sent Time
	once bool
}

// onNewPath handles a packet that carries live server session s's token
// from an address s does not accept. It is not executed or answered; the
// address gets a challenge, at most one per challengeGap and no larger
// than the packet that caused it (both are a bare header), so a forged
// source cannot turn the server into an amplifier. A disconnect from an
// unproved address is dropped: a forged one must not end the session.
func (e *Engine) onNewPath(now Time, from netip.AddrPort, s *session, in *wire.Header) {
	e.stats.DropUnvalidated++
	if in.Type == wire.TypeDisconnect {
		return
	}
	p := s.s.probe
	if p == nil {
		p = new(pathProbe)
		s.s.probe = p
	}
	if p.once && now.Sub(p.sent) < challengeGap {
		return
	}
	// A challenge names an IP, as a session does: a client on several
	// paths shows up on several ports of its new IP at once, and a new
	// nonce for each would keep any answer from matching.
	if p.nonce == 0 || p.addr.Addr() != from.Addr() {
		p.nonce = e.newNonce()
	}
	p.addr, p.sent, p.once = from, now, true
	h := wire.Header{Type: wire.TypePathChallenge, Session: s.remote, ReqNum: p.nonce,
		TxSeq: in.TxSeq, Path: in.Path}
	e.emit(from, &h, nil)
	e.stats.PathChallenges++
}

// onPathResponse moves server session s to the address a challenge was
// answered from, if the answer is the one expected: from the IP
// challenged (any port of it, as a session takes its client's packets
// from any port of its IP), echoing the nonce, with the session's token
// and its client's. The session then takes packets from the new IP, and
// its unasked packets (a closing notice) go to the answering port.
func (e *Engine) onPathResponse(now Time, from netip.AddrPort, s *session, in *wire.Header) {
	p := s.s.probe
	if p == nil || p.nonce == 0 || p.nonce != in.ReqNum || p.addr.Addr() != from.Addr() || in.MsgSize != s.peerToken {
		e.stats.DropStale++
		return
	}
	p.nonce = 0
	e.moveServerSession(s, from)
	s.lastHeard = now
	e.stats.Migrations++
}

// moveServerSession re-keys s under its client's new address. It ends no
// other session: the tables keep whichever session they already name.
func (e *Engine) moveServerSession(s *session, to netip.AddrPort) {
	if k := s.s.key.client(); e.byClient[k] == s {
		delete(e.byClient, k)
		k.addr = to
		if e.byClient[k] == nil {
			e.byClient[k] = s
		}
	}
	if e.byPeer[s.s.key] == s {
		delete(e.byPeer, s.s.key)
	}
	s.s.key.addr = to
	if e.byPeer[s.s.key] == nil {
		e.byPeer[s.s.key] = s
	}
	s.peer, s.s.from = to, to
}

// onPathChallenge answers a server's challenge of this client's address.
// The challenge carries no token (it may reach whoever holds the address),
// so the client answers only for a session that is up with the server it
// came from; the answer goes to that server alone and is no larger than
// the challenge. It leaves on the path the challenge echoes, which is the
// source port the server saw the new address on.
//
// The challenge also says the server dropped the packet it echoes: the
// client resends that packet at once, behind the answer, instead of at
// its backed-off RTO, which an address that changes every few RTOs would
// never outlast. Once it is answered the packets sent before it count as
// overtaken and go again within an RTT (fast retransmit). A forged
// challenge costs at most one such resend per challengeGap.
func (e *Engine) onPathChallenge(now Time, from netip.AddrPort, in *wire.Header) {
	s := e.lookup(in.Session)
	if s == nil || s.c == nil || !s.up || s.peer != from {
		e.stats.DropUnknownSession++
		return
	}
	cs := s.c
	h := s.header(wire.TypePathResponse, in.ReqNum)
	h.MsgSize, h.TxSeq = s.token, in.TxSeq
	if int(in.Path) < cs.paths {
		h.Path = in.Path
	}
	e.emitOnPath(s.peer, &h, nil)
	if j := cs.flight.find(in.TxSeq); j >= 0 && now >= cs.challengeOK {
		cs.challengeOK = now.Add(challengeGap)
		e.retransmit(now, s, j)
		e.markStale(s)
	}
}

// newNonce picks a random nonzero challenge nonce.
func (e *Engine) newNonce() uint64 {
	for {
		if n := e.cfg.Random(); n != 0 {
			return n
		}
	}
}
