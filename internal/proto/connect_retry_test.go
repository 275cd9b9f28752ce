package proto

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// TestRetryOnlyServerFailsConnect attacks the bound on a connect's
// extensions: a server (or an attacker on the path) that answers every
// connect with a retry, after a random delay, with a fresh cookie or the
// one it sent before, must not keep a client connecting forever. Each new
// cookie proves the server alive and extends the connect by
// FailureTimeout, but at most maxConnectRetries times, so the connect
// fails with ErrConnectTimeout within (1+maxConnectRetries) x
// FailureTimeout of its start, and later than FailureTimeout whenever a
// new cookie came before then.
func TestRetryOnlyServerFailsConnect(t *testing.T) {
	const runs = 200
	extended := 0
	for seed := range uint64(runs) {
		rng := rand.New(rand.NewPCG(seed, 27))
		cfg := Config{Random: seedRandom(seed)}
		ft := cfg.withDefaults().FailureTimeout
		e := New(cfg)
		start := Time(time.Second)
		sid := e.Connect(start, serverAddr)
		type answer struct {
			at Time
			p  []byte
		}
		var pending []answer
		var ck, last wire.Cookie
		newCookies, firstNew := 0, Never
		now, downAt := start, Never
		var downErr error
		for downAt == Never && now < start.Add(10*ft) {
			for _, p := range e.Outgoing(now) {
				var h wire.Header
				if _, err := h.Parse(p.AppendTo(nil)); err != nil || h.Type != wire.TypeConnect || rng.IntN(4) == 0 {
					continue // a quarter of the connects go unanswered
				}
				if rng.IntN(3) != 0 {
					ck = wire.Cookie{byte(rng.Uint32()), byte(rng.Uint32()), 1, 2, 3, 4, 5, 6}
				}
				lim := wire.Connect{Window: 8, Credits: 32, MaxMsgSize: 1 << 20, MaxData: tDPP, Cookie: ck, HasCookie: true}
				b := make([]byte, lim.Len())
				lim.Put(b)
				copy(b[wire.ConnectLen:], ck[:])
				d := Time(rng.IntN(int(ft / 2)))
				pending = append(pending, answer{now + d, pkt(wire.Header{Type: wire.TypeConnectAck, Code: wire.CodeRetry,
					Session: sid.Num(), Token: sid.token(), TxSeq: h.TxSeq}, b)})
			}
			next := e.NextDeadline()
			for _, a := range pending {
				next = minTime(next, a.at)
			}
			now = next
			rest := pending[:0]
			for _, a := range pending {
				if a.at > now {
					rest = append(rest, a)
					continue
				}
				var h wire.Header
				payload, _ := h.Parse(a.p)
				var c wire.Connect
				if c.Parse(payload) == nil && (newCookies == 0 || c.Cookie != last) {
					// A cookie the client does not hold: it counts.
					newCookies++
					last = c.Cookie
					if firstNew == Never {
						firstNew = now
					}
				}
				e.Receive(now, serverAddr, a.p)
			}
			pending = rest
			e.Tick(now)
			_, evs := drainEvents(e)
			for _, ev := range evs {
				if ev.Type == EventSessionDown {
					downAt, downErr = now, ev.Err
				}
			}
		}
		if downAt == Never || !errors.Is(downErr, ErrConnectTimeout) {
			t.Fatalf("seed %d: after %v of retries the connect is still open (down at %v: %v)", seed, time.Duration(now-start), downAt, downErr)
		}
		took := time.Duration(downAt - start)
		if took > time.Duration(1+maxConnectRetries)*ft {
			t.Fatalf("seed %d: the connect failed %v after its start, beyond %d x FailureTimeout", seed, took, 1+maxConnectRetries)
		}
		if firstNew < start.Add(ft) {
			if took <= ft {
				t.Fatalf("seed %d: a new cookie came %v in, but the connect failed at %v", seed, time.Duration(firstNew-start), took)
			}
			extended++
		}
		if bound := time.Duration(1+min(newCookies, maxConnectRetries)) * ft; took > bound {
			t.Fatalf("seed %d: %d new cookies, and the connect failed %v after its start, beyond %v", seed, newCookies, took, bound)
		}
	}
	if extended < runs/2 {
		t.Fatalf("only %d of %d runs had a retry extend the connect", extended, runs)
	}
	t.Logf("%d of %d connects extended by a retry", extended, runs)
}
