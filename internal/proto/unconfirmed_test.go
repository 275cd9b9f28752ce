package proto

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// TestUnconfirmedSessionsReaped attacks the reaping of unconfirmed server
// sessions with a random mix of what clients, forgers and the path do:
// connects with and without cookies, echoes of retry cookies, copies and
// replays of cookie-proven connects after their session ended, repeated
// connects, confirmations, disconnects and migrations of unconfirmed
// sessions to a second IP. After every step: every unconfirmed session is
// in exactly one of the two lists, each list is in expiry order and none
// has outlived HalfOpenTimeout, the half-open list is within MaxHalfOpen,
// and a connect whose cookie already made a session never makes a proven
// one. HalfOpenTimeout after the last step only confirmed sessions remain.
func TestUnconfirmedSessionsReaped(t *testing.T) {
	const maxHalf = 4
	var replays, spentSeen, provenReaped int
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 11))
		e := New(Config{Random: seedRandom(seed), CookieSeed: [32]byte{byte(seed), 1}, MaxHalfOpen: maxHalf})
		timeout := e.cfg.HalfOpenTimeout
		now := Time(time.Second)
		type client struct {
			from   netip.AddrPort
			num    uint32
			token  uint32
			ack    wire.Connect // the server's answer, once it has a session
			proven []byte       // its cookie-proven connect, for copies later
		}
		clients := make([]*client, 6)
		for i := range clients {
			clients[i] = &client{from: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(seed), byte(i)}), 7)}
		}
		newIdentity := func(c *client) {
			c.num, c.token, c.ack, c.proven = rng.Uint32N(4), 1+rng.Uint32N(1<<31), wire.Connect{}, nil
		}
		for _, c := range clients {
			newIdentity(c)
		}
		find := func(from netip.AddrPort) *client {
			for _, c := range clients {
				if c.from == from {
					return c
				}
			}
			return nil
		}
		send := func(from netip.AddrPort, p []byte) []wire.Header {
			e.Receive(now, from, p)
			drainEvents(e)
			var hs []wire.Header
			for _, o := range e.Outgoing(now) {
				var h wire.Header
				payload, err := h.Parse(o.AppendTo(nil))
				if err != nil {
					t.Fatal(err)
				}
				if o.To == from && h.Type == wire.TypeConnectAck {
					var ck wire.Connect
					_ = ck.Parse(payload)
					if h.Code == wire.CodeRetry {
						ck.Token = 0
					}
					hs = append(hs, h)
					if c := find(from); c != nil && h.Session == c.num && h.Token == c.token {
						if h.Code == wire.CodeRetry {
							c.proven = connectWith(c.num, c.token, &ck.Cookie)
						} else if h.Code == wire.CodeOK {
							c.ack = ck
						}
					}
				}
			}
			return hs
		}
		ping := func(c *client, from netip.AddrPort) {
			send(from, pkt(wire.Header{Type: wire.TypePing, Session: c.ack.Session, Token: c.ack.Token, TxSeq: rng.Uint32()}, nil))
		}
		var buf []byte
		for step := range 300 {
			c := clients[rng.IntN(len(clients))]
			switch op := rng.IntN(9); op {
			case 0, 1: // forged connects
				for range 1 + rng.IntN(4) {
					from, p := floodConnect(rng, buf)
					buf = p
					send(from, p)
				}
			case 2: // a connect, or the same again
				send(c.from, connectWith(c.num, c.token, nil))
			case 3: // the cookie echoed (again)
				if c.proven != nil {
					send(c.from, c.proven)
				}
			case 4: // confirm
				if c.ack.Token != 0 {
					ping(c, c.from)
				}
			case 5: // disconnect, and a new identity for the next session
				if c.ack.Token != 0 {
					send(c.from, pkt(wire.Header{Type: wire.TypeDisconnect, Session: c.ack.Session, Token: c.ack.Token, TxSeq: 9}, nil))
				}
				old := c.proven
				newIdentity(c)
				if old != nil && rng.IntN(2) == 0 {
					// A copy of the ended session's proven connect, now or later.
					c.proven = old
				}
			case 6: // a copy of a proven connect whose session may have ended
				if c.proven != nil {
					replays++
					before, spent := e.provenOpen.n, e.stats.SpentCookies
					send(c.from, c.proven)
					if e.stats.SpentCookies > spent {
						spentSeen++
						if e.provenOpen.n > before {
							t.Fatalf("seed %d step %d: a spent cookie made a proven session", seed, step)
						}
					}
				}
			case 7: // migrate an unconfirmed session to a second IP and answer the challenge
				if c.ack.Token != 0 {
					other := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, byte(seed), byte(rng.IntN(6))}), 7)
					e.Receive(now, other, pkt(wire.Header{Type: wire.TypePing, Session: c.ack.Session, Token: c.ack.Token, TxSeq: 1}, nil))
					for _, o := range e.Outgoing(now) {
						var h wire.Header
						if _, err := h.Parse(o.AppendTo(nil)); err == nil && h.Type == wire.TypePathChallenge && o.To == other {
							send(other, pkt(wire.Header{Type: wire.TypePathResponse, Session: c.ack.Session, Token: c.ack.Token,
								ReqNum: h.ReqNum, MsgSize: c.token, TxSeq: 2}, nil))
						}
					}
				}
			case 8: // time passes
				now += Time(rng.IntN(int(timeout / 2)))
				reapedBefore := e.stats.HalfOpenReaped
				provenBefore := e.provenOpen.n
				e.Tick(now)
				drainEvents(e)
				e.Outgoing(now)
				if e.stats.HalfOpenReaped > reapedBefore && e.provenOpen.n < provenBefore {
					provenReaped++
				}
				if d := e.halfOpenDeadline(); d <= now {
					t.Fatalf("seed %d step %d: after Tick(%v) an unconfirmed session due at %v is left", seed, step, now, d)
				}
			}
			if err := checkUnconfirmed(e, now, maxHalf); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
		now += Time(timeout)
		e.Tick(now)
		drainEvents(e)
		e.Outgoing(now)
		for _, s := range e.sessions {
			if s != nil && s.s != nil && !s.s.confirmed {
				t.Fatalf("seed %d: HalfOpenTimeout after the last step, an unconfirmed session is still there (in %p, due %v, now %v)",
					seed, s.s.unconfirmedIn, s.s.halfDue, now)
			}
		}
	}
	t.Logf("%d copies of proven connects, %d of them with a spent cookie; %d rounds reaped cookie-proven sessions", replays, spentSeen, provenReaped)
	if spentSeen == 0 || provenReaped == 0 {
		t.Fatalf("the attack did not bite: %d spent cookies seen, %d rounds reaped cookie-proven sessions", spentSeen, provenReaped)
	}
}

// checkUnconfirmed checks the lists of unconfirmed sessions against the
// session table at now, after a Tick(now) or a receive at now.
func checkUnconfirmed(e *Engine, now Time, maxHalf int) error {
	inLists := 0
	for _, l := range []*halfOpenList{&e.halfOpen, &e.provenOpen} {
		n, last := 0, Time(0)
		for s := l.head; s != nil; s = s.s.halfNext {
			switch {
			case s.s.unconfirmedIn != l:
				return fmt.Errorf("a session in a list says it is in %p", s.s.unconfirmedIn)
			case s.s.confirmed:
				return fmt.Errorf("a confirmed session is in a list of unconfirmed ones")
			case s.s.halfDue < last:
				return fmt.Errorf("a list is out of expiry order: %v after %v", s.s.halfDue, last)
			case s.s.halfDue > now.Add(e.cfg.HalfOpenTimeout):
				return fmt.Errorf("a session due at %v, more than HalfOpenTimeout from %v", s.s.halfDue, now)
			case e.sessions[s.num] != s:
				return fmt.Errorf("an ended session is in a list")
			}
			last = s.s.halfDue
			n++
		}
		if n != l.n {
			return fmt.Errorf("a list counts %d sessions and holds %d", l.n, n)
		}
		inLists += n
	}
	if e.halfOpen.n > maxHalf {
		return fmt.Errorf("%d half-open sessions, over the bound %d", e.halfOpen.n, maxHalf)
	}
	unconfirmed := 0
	for _, s := range e.sessions {
		if s != nil && s.s != nil && !s.s.confirmed {
			unconfirmed++
			if s.s.unconfirmedIn == nil {
				return fmt.Errorf("an unconfirmed session is in no list")
			}
		}
	}
	if unconfirmed != inLists {
		return fmt.Errorf("%d unconfirmed sessions, %d in the lists", unconfirmed, inLists)
	}
	return nil
}
