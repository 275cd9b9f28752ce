package proto

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
	"github.com/erpc-go/erpc/internal/wire"
)

// floodClients runs a forged connect flood (20,000/s, as TestConnectFlood)
// against a server whose real clients see link on every packet, and
// returns how long each client took from its dial to its call's end, and
// the error it ended with.
func floodClients(t *testing.T, seed uint64, link simnet.LinkConfig, dials int, noFlood bool) (took []time.Duration, errs []error) {
	cfg := Config{Random: seedRandom(seed), CookieSeed: [32]byte{byte(seed)}}
	w := newWorld(t, seed, link)
	w.dropStrays = true
	srv := w.addHost("server", "10.0.0.1:1", cfg)
	srv.onEvent = func(ev Event) {
		if ev.Type == EventRequest {
			if err := srv.e.Respond(w.now, ev.Req, 0, ev.Req.Data()); err != nil {
				t.Fatal(err)
			}
		}
	}
	took = make([]time.Duration, dials)
	errs = make([]error, dials)
	ended := make([]bool, dials)
	for i := range dials {
		cli := w.addHost(fmt.Sprintf("c%d", i), fmt.Sprintf("10.0.1.%d:1", i+1), Config{Random: seedRandom(seed*100 + uint64(i))})
		start := Time(200*time.Millisecond) + Time(i)*Time(137*time.Millisecond)
		cli.onEvent = func(ev Event) {
			if ended[i] {
				return
			}
			if ev.Type == EventResponse || ev.Type == EventSessionDown {
				ended[i], took[i], errs[i] = true, time.Duration(w.now-start), ev.Err
			}
		}
		w.at(start, func() {
			sid := cli.e.Connect(w.now, srv.addr)
			if _, err := cli.e.StartCall(w.now, sid, 1, []byte("hello"), nil, Never, nil); err != nil {
				ended[i], errs[i] = true, err
			}
		})
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	var buf []byte
	var flood func()
	flood = func() {
		for range 20 {
			from, p := floodConnect(rng, buf)
			buf = p
			srv.e.Receive(w.now, from, p)
		}
		w.at(w.now+Time(time.Millisecond), flood)
	}
	if !noFlood {
		w.at(Time(10*time.Millisecond), flood)
	}
	w.runUntil(Time(30*time.Second), func() bool {
		for _, e := range ended {
			if !e {
				return false
			}
		}
		return true
	})
	st := srv.e.Stats()
	if !noFlood && (st.RetriesSent < 10000 || st.HalfOpen < cfg.withDefaults().MaxHalfOpen-50) {
		t.Fatalf("the flood did not press: %d retries, %d half open", st.RetriesSent, st.HalfOpen)
	}
	return took, errs
}

// TestFloodLocksOutLongRTTClient: promise 1 says a forged connect flood
// never locks a real client out, and the doc that a real client "pays one
// round trip more". A client 1.2 s away (RTT under FailureTimeout, 2 s)
// connects and calls without a flood; during one it must take the retry
// round trip too, but its connect still times out FailureTimeout after it
// started, though the server's retry answered it: 2 RTTs > 2 s. It is
// locked out for as long as the flood lasts, unless a connect retry
// happens to land just after a half-open session was reaped.
func TestFloodLocksOutLongRTTClient(t *testing.T) {
	link := simnet.LinkConfig{Delay: 600 * time.Millisecond}
	for _, noFlood := range []bool{true, false} {
		took, errs := floodClients(t, 1, link, 20, noFlood)
		failed := 0
		for i := range took {
			if errs[i] != nil {
				failed++
				if failed <= 3 {
					t.Errorf("flood %v: client %d: call failed after %v: %v", !noFlood, i, took[i], errs[i])
				}
			}
		}
		t.Logf("flood %v: %d of %d clients failed", !noFlood, failed, len(took))
	}
}

// TestReplayedCookieAfterClose: promise 3 says a replayed cookie never
// creates a second session, and the wire doc that a late connect costs at
// most an unconfirmed session reaped within a second or so, bounded by
// MaxHalfOpen. A copy of a cookie-proven connect (a network duplicate, or
// a replay from the path, which the cookie doc says is "soon worthless")
// that arrives after its session ended, still within the cookie's
// lifetime, makes a second session: proven, so neither half open nor
// bounded, nor reaped before IdleTimeout (30 s), nor displaceable.
func TestReplayedCookieAfterClose(t *testing.T) {
	e := New(Config{Random: seedRandom(1), CookieSeed: [32]byte{5}, MaxHalfOpen: 1})
	t0 := Time(10 * time.Second)
	a, b := addr("10.0.0.2:7"), addr("10.0.0.3:7")
	answer(t, e, t0, a, connectWith(1, 11, nil)) // the half-open bound (1) is reached
	h, r := answer(t, e, t0, b, connectWith(2, 22, nil))
	if h.Code != wire.CodeRetry {
		t.Fatalf("want a retry, got %+v", h)
	}
	proven := connectWith(2, 22, &r.Cookie)
	h, ack := answer(t, e, t0, b, proven)
	if h.Code != wire.CodeOK {
		t.Fatalf("the proven connect: %+v", h)
	}
	// The client calls (a ping here) and closes its session.
	e.Receive(t0, b, pkt(wire.Header{Type: wire.TypePing, Session: ack.Session, Token: ack.Token, TxSeq: 2}, nil))
	e.Receive(t0, b, pkt(wire.Header{Type: wire.TypeDisconnect, Session: ack.Session, Token: ack.Token, TxSeq: 3}, nil))
	drainEvents(e)
	e.Outgoing(t0)
	before := e.Stats()
	// A copy of the proven connect, 1 s later.
	t1 := t0 + Time(time.Second)
	h2, ack2 := answer(t, e, t1, b, proven)
	st := e.Stats()
	if h2.Code == wire.CodeOK && st.ServerSessions > before.ServerSessions {
		t.Errorf("the replayed cookie made a second session (number %d, token %d; the first was %d, %d): %d server sessions, %d half open",
			ack2.Session, ack2.Token, ack.Session, ack.Token, st.ServerSessions, st.HalfOpen)
	}
	// Well past HalfOpenTimeout: a's half-open session is reaped, and a
	// late connect's session should be gone too.
	t2 := t1 + Time(5*time.Second)
	e.Tick(t2)
	drainEvents(e)
	e.Outgoing(t2)
	if st := e.Stats(); st.ServerSessions != 0 {
		t.Errorf("5 s after the replay the unconfirmed session it made is still there (%d server sessions, %d half open): "+
			"a late connect should cost at most a half-open session reaped within HalfOpenTimeout", st.ServerSessions, st.HalfOpen)
	}
}

// TestHalfOpenMemoryWithWindow: promise 2 says a flood of forged connects
// holds at most MaxHalfOpen sessions of about 1.2 KiB each (the doc's
// words). Each half-open session allocates its slot array at the connect,
// sized by the window the forged connect asks for, capped only by the
// server's Window: a server configured for 1024 concurrent requests per
// session (Window is documented up to 32768) holds 80 B x 1024 per forged
// session, 80 MiB for the default MaxHalfOpen, not about 1.2 MiB.
func TestHalfOpenMemoryWithWindow(t *testing.T) {
	e := New(Config{Random: seedRandom(1), CookieSeed: [32]byte{6}, Window: 1024})
	bound := e.cfg.MaxHalfOpen
	rng := rand.New(rand.NewPCG(9, 9))
	now := Time(time.Second)
	before := heapInUse()
	var buf []byte
	for range 2 * bound {
		from, p := floodConnect(rng, buf)
		buf = p
		c := wire.Connect{Session: rng.Uint32(), Window: 0xFFFF, Credits: 32, MaxMsgSize: 8 << 20, MaxData: tDPP}
		c.Put(p[wire.HeaderLen:])
		e.Receive(now, from, p)
		e.Outgoing(now)
		drainEvents(e)
	}
	grew := int64(heapInUse()) - int64(before)
	st := e.Stats()
	t.Logf("%d half-open sessions, %d retries; the heap grew %d KiB (%d B per half-open session)",
		st.HalfOpen, st.RetriesSent, grew>>10, grew/int64(max(st.HalfOpen, 1)))
	if st.HalfOpen != bound {
		t.Fatalf("%d half-open sessions, want the bound %d", st.HalfOpen, bound)
	}
	if grew > 4<<20 {
		t.Errorf("%d forged connects hold %d KiB of heap: over 4 MiB, against the documented ~1.2 KiB per half-open session",
			2*bound, grew>>10)
	}
	runtime.KeepAlive(e)
}

// TestNATPortReuseDisplacesConfirmed: promise 4 says a confirmed session
// is never displaced by a newcomer. A server session takes its client's
// packets from any port of its IP (a NAT rebinding the port keeps the
// session, no challenge), but it stays keyed by the port of its connect.
// Another client behind the same NAT that is later given that port, with
// the same client session number (every client engine numbers its first
// session 0), connects and confirms: confirm() takes it for the first
// client restarted and ends the first client's live, confirmed session.
func TestNATPortReuseDisplacesConfirmed(t *testing.T) {
	e := New(Config{Random: seedRandom(1), CookieSeed: [32]byte{7}})
	now := Time(time.Second)
	natA, natA2 := addr("203.0.113.1:5000"), addr("203.0.113.1:6000")
	ping := func(from netip.AddrPort, c wire.Connect, seq uint32) {
		e.Receive(now, from, pkt(wire.Header{Type: wire.TypePing, Session: c.Session, Token: c.Token, TxSeq: seq}, nil))
		e.Outgoing(now)
	}
	// Client A, session 0, through the NAT's port 5000; confirmed.
	_, a := answer(t, e, now, natA, connectWith(0, 11, nil))
	ping(natA, a, 2)
	// The NAT moves A to port 6000: A's session goes on (no challenge).
	now += Time(time.Second)
	ping(natA2, a, 3)
	if names, evs := drainEvents(e); len(names) != 0 {
		t.Fatalf("A moved port: events %v %+v", names, evs)
	}
	// Client B gets port 5000 and opens its first session, 0.
	now += Time(time.Second)
	_, b := answer(t, e, now, natA, connectWith(0, 22, nil))
	ping(natA, b, 2)
	_, evs := drainEvents(e)
	for _, ev := range evs {
		if ev.Type == EventSessionDown {
			t.Errorf("client B's confirmation ended a confirmed session (number %d; A's is %d, B's %d): %v",
				ev.Session.Num(), a.Session, b.Session, ev.Err)
		}
	}
	// A's next packet, from its current port, meets a reset.
	e.Receive(now, natA2, pkt(wire.Header{Type: wire.TypePing, Session: a.Session, Token: a.Token, TxSeq: 4}, nil))
	for _, p := range e.Outgoing(now) {
		var h wire.Header
		if _, err := h.Parse(p.AppendTo(nil)); err == nil && h.Type == wire.TypeReset {
			t.Errorf("client A's ping from %v after B connected: reset (code %d)", p.To, h.Code)
		}
	}
}

// TestHalfOpenReapStalledByMigration: promise 2 says connects from
// sources that never prove they receive are reaped within
// HalfOpenTimeout. The half-open list is reaped from its head, assuming
// creation order is lastHeard order; but a path response sets lastHeard
// on a half-open session without confirming it or moving it in the list.
// One accomplice that receives at two IPs keeps its half-open session at
// the head, fresh, by moving it between its IPs every half second (a
// packet from the other IP draws a challenge, which it answers), and the
// forged half-open sessions queued behind it are never reaped: the bound
// stays full of them for as long as the accomplice keeps going.
func TestHalfOpenReapStalledByMigration(t *testing.T) {
	const bound = 8
	e := New(Config{Random: seedRandom(1), CookieSeed: [32]byte{8}, MaxHalfOpen: bound})
	now := Time(time.Second)
	ips := []netip.AddrPort{addr("10.9.0.1:7"), addr("10.9.0.2:7")}
	_, acc := answer(t, e, now, ips[0], connectWith(1, 11, nil)) // the accomplice: half open, at the head
	rng := rand.New(rand.NewPCG(4, 4))
	var buf []byte
	for range bound - 1 { // forged connects fill the bound
		from, p := floodConnect(rng, buf)
		buf = p
		e.Receive(now, from, p)
	}
	e.Outgoing(now)
	drainEvents(e)
	if st := e.Stats(); st.HalfOpen != bound {
		t.Fatalf("%d half open, want %d", st.HalfOpen, bound)
	}
	for i := 1; i <= 10; i++ {
		now += Time(500 * time.Millisecond)
		e.Tick(now)
		e.Outgoing(now)
		drainEvents(e)
		ip := ips[i%2] // the IP the session is not on
		e.Receive(now, ip, pkt(wire.Header{Type: wire.TypePing, Session: acc.Session, Token: acc.Token, TxSeq: uint32(2 * i)}, nil))
		var nonce uint64
		for _, p := range e.Outgoing(now) {
			var h wire.Header
			if _, err := h.Parse(p.AppendTo(nil)); err == nil && h.Type == wire.TypePathChallenge && p.To == ip {
				nonce = h.ReqNum
			}
		}
		if nonce == 0 {
			t.Fatalf("step %d: no challenge", i)
		}
		e.Receive(now, ip, pkt(wire.Header{Type: wire.TypePathResponse, Session: acc.Session, Token: acc.Token,
			ReqNum: nonce, MsgSize: 11, TxSeq: uint32(2*i + 1)}, nil))
		e.Outgoing(now)
		drainEvents(e)
	}
	st := e.Stats()
	t.Logf("5 s on: %d half open, %d reaped, %d migrations", st.HalfOpen, st.HalfOpenReaped, st.Migrations)
	if st.HalfOpenReaped < bound-1 {
		t.Errorf("5 s after %d forged connects (HalfOpenTimeout 1 s), %d of them reaped; %d sessions still half open",
			bound-1, st.HalfOpenReaped, st.HalfOpen)
	}
}
