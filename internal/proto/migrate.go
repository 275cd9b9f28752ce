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

// challengeGap is the least time between two challenges of one session,
// whatever became of the last one: a session's new addresses draw at most
// one challenge per gap.
const challengeGap = time.Millisecond

// challengeLife is how long a challenge's nonce stays valid after it was
// last sent: far above any round trip the engine is built for (its RTO
// tops out at 200 ms), so an answer is never too late, yet bounded, so an
// answer captured long ago cannot move the session back.
const challengeLife = time.Second

// pathProbe is a server session's path challenges. It is allocated the
// first time the session's client shows up from a new address, so
// sessions that never move do not pay for it.
//
// A packet with the session's token from an unproved address may be the
// client or a forgery by someone who saw the token, and one challenge at
// a time would let a forger that keeps sending from an address of its own
// take the challenge over before the client's answer is back, for ever.
// So the nonces of the last two IPs challenged stay valid (each for
// challengeLife), and a packet the gap holds back from an IP other than
// the one challenged last is remembered, and challenged in place of the
// next packet from that last IP: a flood from one address takes at most
// every other challenge, and cannot void the client's before it is
// answered. (Forgers on many IPs can still crowd it
// out; they are on the path, and the doc does not claim to stop them.)
type pathProbe struct {
	tries [2]challenge
	// sent is when the session's last challenge left, to lastIP,
	// answered or not: the gap runs from it (once is true).
	sent   Time
	once   bool
	lastIP netip.Addr
	// held is a packet the gap held back, at heldAt, from another IP
	// than lastIP: if the next packet past the gap comes from lastIP,
	// held's address is challenged instead (echoing its sequence number
	// and path).
	held     netip.AddrPort
	heldAt   Time
	heldSeq  uint32
	heldPath uint8
}

// challenge is a nonce sent to an IP; any port of it may answer.
type challenge struct {
	ip    netip.Addr
	nonce uint64 // 0: none
	sent  Time   // when it was last sent
}

func (c *challenge) valid(now Time) bool { return c.nonce != 0 && now.Sub(c.sent) < challengeLife }

// onNewPath handles a packet that carries live server session s's token
// from an address s does not accept. It is not executed or answered; an
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
	heldFresh := p.held.IsValid() && now.Sub(p.heldAt) < 2*challengeGap
	if p.once && now.Sub(p.sent) < challengeGap {
		if !heldFresh && from.Addr() != p.lastIP {
			p.held, p.heldAt, p.heldSeq, p.heldPath = from, now, in.TxSeq, in.Path
		}
		return
	}
	to, seq, path := from, in.TxSeq, in.Path
	if heldFresh && from.Addr() == p.lastIP {
		// The IP at hand had the last challenge, whose nonce stays
		// valid: the one held back has its turn.
		to, seq, path = p.held, p.heldSeq, p.heldPath
	}
	p.held = netip.AddrPort{}
	c := p.challengeFor(now, to.Addr(), e)
	c.sent = now
	p.sent, p.once, p.lastIP = now, true, to.Addr()
	h := wire.Header{Type: wire.TypePathChallenge, Session: s.remote, ReqNum: c.nonce, TxSeq: seq, Path: path}
	e.emitFor(s, to, &h, nil)
	e.stats.PathChallenges++
}

// challengeFor returns ip's challenge: the one out there if still valid
// (a client on several paths shows up on several ports of its new IP at
// once, and a new nonce for each would keep any answer from matching),
// else a new nonce in place of the older of the two.
func (p *pathProbe) challengeFor(now Time, ip netip.Addr, e *Engine) *challenge {
	for i := range p.tries {
		if c := &p.tries[i]; c.ip == ip && c.valid(now) {
			return c
		}
	}
	c := &p.tries[0] // the one to replace: an invalid one, else the older
	if c0, c1 := c.valid(now), p.tries[1].valid(now); !c1 || (c0 && p.tries[1].sent < c.sent) {
		c = &p.tries[1]
	}
	*c = challenge{ip: ip, nonce: e.newNonce()}
	return c
}

// onPathResponse moves server session s to the address a challenge was
// answered from, if the answer is one expected: from an IP challenged
// (any port of it, as a session takes its client's packets from any port
// of its IP), echoing that IP's valid nonce, with the session's token and
// its client's. The session then takes packets from the new IP, and its
// unasked packets (a closing notice) go to the answering port.
//
// The answer carries the server's token, which only the connect-ack told,
// and the nonce, which only the new address was sent: it proves what a
// confirming packet proves (its sender has the ack, and receives where it
// claims to be), so it confirms a session still unconfirmed. Merely
// refreshing one would keep it half open yet fresh, out of step with the
// reaper's list (halfopen.go).
func (e *Engine) onPathResponse(now Time, from netip.AddrPort, s *session, in *wire.Header) {
	p := s.s.probe
	if p == nil || in.MsgSize != s.peerToken || in.ReqNum == 0 {
		e.stats.DropStale++
		return
	}
	for i := range p.tries {
		if c := &p.tries[i]; c.ip == from.Addr() && c.nonce == in.ReqNum && c.valid(now) {
			p.tries, p.held = [2]challenge{}, netip.AddrPort{}
			e.moveServerSession(s, from)
			s.lastHeard = now
			e.stats.Migrations++
			if !s.s.confirmed {
				e.establish(now, s)
			}
			return
		}
	}
	e.stats.DropStale++
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
	e.emitOnPath(s, &h, nil)
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
