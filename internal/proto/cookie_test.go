package proto

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// connectWith builds a connect from client session num with token, echoing
// cookie if it is not nil.
func connectWith(num, token uint32, cookie *wire.Cookie) []byte {
	c := wire.Connect{Session: num, Window: 8, Credits: 32, MaxMsgSize: 8 << 20, MaxData: tDPP}
	b := make([]byte, wire.ConnectLen, wire.ConnectLen+wire.CookieLen)
	c.Put(b)
	if cookie != nil {
		b = append(b, cookie[:]...)
	}
	return pkt(wire.Header{Type: wire.TypeConnect, Session: ^uint32(0), Token: token, TxSeq: 1}, b)
}

// answer feeds one connect to e and returns its only answer (a closing
// reset to another client may go out too).
func answer(t *testing.T, e *Engine, now Time, from netip.AddrPort, p []byte) (wire.Header, wire.Connect) {
	t.Helper()
	e.Receive(now, from, p)
	drainEvents(e)
	var to []Packet
	for _, p := range e.Outgoing(now) {
		if p.To == from {
			to = append(to, p)
		}
	}
	if len(to) != 1 {
		t.Fatalf("a connect from %v answered with %d packets", from, len(to))
	}
	var h wire.Header
	payload, err := h.Parse(to[0].AppendTo(nil))
	var c wire.Connect
	refused := h.Code != wire.CodeOK && h.Code != wire.CodeRetry // a refusal carries no limits
	if err != nil || h.Type != wire.TypeConnectAck || (c.Parse(payload) != nil && !refused) {
		t.Fatalf("a connect answered with %+v (%v), payload % x", h, err, payload)
	}
	return h, c
}

// TestConnectCookie attacks the retry cookie: under pressure a connect
// gets a session only with the cookie minted for its own address, port,
// session number and token, in the current or the previous time bucket;
// a valid cookie replayed makes no second session.
func TestConnectCookie(t *testing.T) {
	e := New(Config{Random: seedRandom(1), CookieSeed: [32]byte{2}, MaxHalfOpen: 1})
	t0 := Time(10 * time.Second) // the start of a bucket
	a, b, c := addr("10.0.0.2:7"), addr("10.0.0.3:7"), addr("10.0.0.4:7")
	if h, _ := answer(t, e, t0, a, connectWith(1, 11, nil)); h.Code != wire.CodeOK || h.Flags&wire.FlagConfirm == 0 {
		t.Fatalf("the first connect: %+v; want a half-open session", h)
	}
	// The half-open bound (1) is reached: the next connects get retries.
	retry := func(at Time, from netip.AddrPort, num, token uint32, cookie *wire.Cookie) wire.Cookie {
		t.Helper()
		before := e.Stats().ServerSessions
		h, ck := answer(t, e, at, from, connectWith(num, token, cookie))
		if h.Code != wire.CodeRetry || !ck.HasCookie || h.Session != num || h.Token != token {
			t.Fatalf("connect from %v num %d token %d: %+v %+v; want a retry", from, num, token, h, ck)
		}
		if st := e.Stats(); st.ServerSessions != before {
			t.Fatalf("a retried connect made a session: %+v", st)
		}
		return ck.Cookie
	}
	ckB := retry(t0, b, 2, 22, nil)
	ckC := retry(t0, c, 3, 33, nil)
	if ckB == ckC {
		t.Fatal("two clients got the same cookie")
	}
	if again := retry(t0+Time(time.Second), b, 2, 22, nil); again != ckB {
		t.Fatal("a cookie changed within its bucket")
	}
	flipped := ckB
	flipped[3] ^= 1
	bad := []struct {
		name       string
		from       netip.AddrPort
		num, token uint32
		cookie     wire.Cookie
	}{
		{"another port", addr("10.0.0.3:8"), 2, 22, ckB},
		{"another address", c, 2, 22, ckB},
		{"another token", b, 2, 23, ckB},
		{"another session number", b, 3, 22, ckB},
		{"a bit flipped", b, 2, 22, flipped},
		{"another client's cookie", b, 2, 22, ckC},
	}
	for i, tt := range bad {
		retry(t0, tt.from, tt.num, tt.token, &tt.cookie)
		if st := e.Stats(); st.BadCookies != uint64(i+1) {
			t.Fatalf("%s: %d bad cookies counted, want %d", tt.name, st.BadCookies, i+1)
		}
	}
	// Blind guesses, as a forger who never sees a cookie must make.
	rng := rand.New(rand.NewPCG(3, 3))
	for range 1000 {
		var guess wire.Cookie
		for i := range guess {
			guess[i] = byte(rng.Uint32())
		}
		retry(t0, b, 2, 22, &guess)
	}
	if st := e.Stats(); st.BadCookies != uint64(len(bad)+1000) {
		t.Fatalf("%d bad cookies counted, want %d", st.BadCookies, len(bad)+1000)
	}

	// The right cookie, in the next bucket: a session, not half open,
	// though the half-open bound is reached. Unconfirmed, it is reaped
	// like a half-open one, so its ack asks for a confirmation at once.
	t1 := t0 + Time(cookieBucket)
	h, ack := answer(t, e, t1, b, connectWith(2, 22, &ckB))
	if h.Code != wire.CodeOK || ack.Token == 0 || ack.HasCookie || h.Flags&wire.FlagConfirm == 0 {
		t.Fatalf("the echoed cookie: %+v %+v; want a session", h, ack)
	}
	if st := e.Stats(); st.ServerSessions != 2 || st.HalfOpen != 1 {
		t.Fatalf("after the echo: %+v", st)
	}
	// Replayed, before and after the client confirms: the same session.
	for _, confirm := range []bool{false, true} {
		if confirm {
			e.Receive(t1, b, pkt(wire.Header{Type: wire.TypePing, Session: ack.Session, Token: ack.Token, TxSeq: 2}, nil))
			e.Outgoing(t1)
		}
		h2, ack2 := answer(t, e, t1, b, connectWith(2, 22, &ckB))
		if h2.Code != wire.CodeOK || ack2.Session != ack.Session || ack2.Token != ack.Token {
			t.Fatalf("a replayed cookie (confirmed %v) got %+v %+v; want the first session's ack", confirm, h2, ack2)
		}
		if st := e.Stats(); st.ServerSessions != 2 {
			t.Fatalf("a replayed cookie made a session: %+v", st)
		}
	}
	// Two buckets on, C's cookie has expired: another retry.
	ckC2 := retry(t0+2*Time(cookieBucket), c, 3, 33, &ckC)
	if st := e.Stats(); st.BadCookies != uint64(len(bad)+1001) || ckC2 == ckC {
		t.Fatalf("an expired cookie: %+v, new cookie %x (old %x)", st, ckC2, ckC)
	}
	if h, _ := answer(t, e, t0+2*Time(cookieBucket), c, connectWith(3, 33, &ckC2)); h.Code != wire.CodeOK {
		t.Fatalf("the fresh cookie: %+v", h)
	}
}

// TestConnectCookieFullTable: with the table full, a proven connect takes
// the place of the oldest half-open session, which ends; a table of
// confirmed and proven sessions refuses even a proven connect.
func TestConnectCookieFullTable(t *testing.T) {
	e := New(Config{Random: seedRandom(1), CookieSeed: [32]byte{3}, MaxSessions: 2})
	now := Time(time.Second)
	_, first := answer(t, e, now, addr("10.0.0.2:7"), connectWith(1, 11, nil))
	e.Receive(now, addr("10.0.0.2:7"), pkt(wire.Header{Type: wire.TypePing, Session: first.Session, Token: first.Token, TxSeq: 2}, nil))
	e.Outgoing(now)
	answer(t, e, now, addr("10.0.0.3:7"), connectWith(2, 22, nil)) // half open
	h, r := answer(t, e, now, addr("10.0.0.4:7"), connectWith(3, 33, nil))
	if h.Code != wire.CodeRetry {
		t.Fatalf("a full table with a half-open session: %+v; want a retry", h)
	}
	if h, _ := answer(t, e, now, addr("10.0.0.4:7"), connectWith(3, 33, &r.Cookie)); h.Code != wire.CodeOK {
		t.Fatalf("the proven connect: %+v", h)
	}
	if st := e.Stats(); st.ServerSessions != 2 || st.HalfOpen != 0 || st.HalfOpenReaped != 1 || st.ResetsSent != 1 {
		t.Fatalf("after the proven connect: %+v; want it in the half-open session's place", st)
	}
	if h, _ := answer(t, e, now, addr("10.0.0.5:7"), connectWith(4, 44, nil)); h.Code != wire.CodeTooManySessions {
		t.Fatalf("a table of confirmed and proven sessions: %+v; want a refusal", h)
	}
}

// TestClientRetry: a client told to retry sends its connect again at once
// with the cookie, the same cookie again only at the next connect retry,
// and comes up on the final ack; a server that says the session is half
// open gets a ping at once from a client with nothing to send.
func TestClientRetry(t *testing.T) {
	e := New(Config{Random: seedRandom(1)})
	now := Time(1000)
	sid := e.Connect(now, serverAddr)
	var first wire.Header // its sequence numbers start at random
	if _, err := first.Parse(e.Outgoing(now)[0].AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	ck := wire.Cookie{9, 8, 7, 6, 5, 4, 3, 2}
	lim := wire.Connect{Window: 8, Credits: 32, MaxMsgSize: 1 << 20, MaxData: tDPP, Cookie: ck, HasCookie: true}
	b := make([]byte, lim.Len())
	lim.Put(b)
	copy(b[wire.ConnectLen:], ck[:])
	retryAck := pkt(wire.Header{Type: wire.TypeConnectAck, Code: wire.CodeRetry, Session: sid.Num(), Token: sid.token(), TxSeq: 1}, b)
	sentCookie := func(what string, want int) {
		t.Helper()
		pkts := e.Outgoing(now)
		if len(pkts) != want {
			t.Fatalf("%s: %d packets, want %d", what, len(pkts), want)
		}
		for _, p := range pkts {
			var h wire.Header
			payload, _ := h.Parse(p.AppendTo(nil))
			var c wire.Connect
			if h.Type != wire.TypeConnect || c.Parse(payload) != nil || !c.HasCookie || c.Cookie != ck {
				t.Fatalf("%s: sent %+v % x; want a connect echoing the cookie", what, h, payload)
			}
		}
	}
	now += 20_000
	e.Receive(now, serverAddr, retryAck)
	sentCookie("the retry", 1)
	e.Receive(now, serverAddr, retryAck)
	sentCookie("the same retry again", 0)
	now += Time(100 * time.Millisecond) // ConnectRetry
	e.Tick(now)
	sentCookie("the connect retry timer", 1)

	ok := wire.Connect{Session: tSrvNum, Window: 8, Credits: 32, MaxMsgSize: 1 << 20, MaxData: tDPP, Token: tSrvTok}
	ob := make([]byte, wire.ConnectLen)
	ok.Put(ob)
	e.Receive(now, serverAddr, pkt(wire.Header{Type: wire.TypeConnectAck, Flags: wire.FlagConfirm, Session: sid.Num(), Token: sid.token(), TxSeq: 3}, ob))
	names, _ := drainEvents(e)
	checkEvents(t, "the ack", names, "session-up")
	checkOut(t, "a half-open session is confirmed at once", decode(t, e.Outgoing(now), serverAddr, tSrvNum, tSrvTok),
		[]out{{Type: wire.TypePing, Seq: first.TxSeq + 3}})
}

// TestRetryZeroAllocs: under pressure, a forged connect costs the server no
// allocation: it is answered with a cookie minted in scratch space and sent
// from a per-round buffer.
func TestRetryZeroAllocs(t *testing.T) {
	e := New(Config{Random: seedRandom(1), CookieSeed: [32]byte{4}, MaxHalfOpen: 1})
	now := Time(time.Second)
	rng := rand.New(rand.NewPCG(5, 5))
	var buf []byte
	const n = 4096
	forged := make([][]byte, n)
	from := make([]netip.AddrPort, n)
	for i := range n {
		from[i], buf = floodConnect(rng, buf)
		forged[i] = append([]byte(nil), buf...)
	}
	i := 0
	feed := func() {
		for range 16 {
			e.Receive(now, from[i%n], forged[i%n])
			i++
		}
		e.Outgoing(now)
	}
	feed() // the first makes the half-open session; the buffers grow
	feed()
	if allocs := testing.AllocsPerRun(100, feed); allocs != 0 {
		t.Fatalf("16 forged connects and their retries allocate %.1f times", allocs)
	}
	if st := e.Stats(); st.RetriesSent < 100*16 || st.HalfOpen != 1 {
		t.Fatalf("%+v: the connects were not all retried", st)
	}
}
