package proto

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
	"github.com/erpc-go/erpc/internal/wire"
)

// TestForgedResetIsNotBelieved (found by review): an attacker that saw
// one client datagram of the session, before the call at stake (it knows
// the server's session number and token, and that datagram's sequence
// and request numbers), spoofs the server's address while the call's
// handler runs, and sends the client resets: a closing notice (claiming
// no request ran) without or with a guessed client token, and resets for
// an unknown session (claiming the server has had none for 71 minutes)
// echoing what it saw, or nothing. The client used to end the session and
// fail the call with ErrNotExecuted, and the driver, sending it again on
// a new session, ran the handler twice. Now none is believed: each is
// dropped and counted, the session stays up, and the call completes with
// the handler's answer, having run once.
//
// What this does not defend: an attacker that reads the session's
// packets as they go can echo a packet in flight, or read the client's
// token off a server packet (see the wire package's threat model).
func TestForgedResetIsNotBelieved(t *testing.T) {
	forged := 0
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 0x4e5))
		w := newWorld(t, seed, simnet.LinkConfig{Delay: time.Duration(20+r.IntN(200)) * time.Microsecond})
		srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(seed)})
		cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(seed + 100)})
		runs := 0
		var slow ReqHandle
		srv.onEvent = func(ev Event) {
			if ev.Type != EventRequest {
				return
			}
			runs++
			if string(ev.Req.Data()) == "pay once" {
				slow = ev.Req // a slow handler: it has run, its answer is not out yet
				return
			}
			_ = srv.e.Respond(w.now, ev.Req, 0, []byte("ok"))
		}
		srv.e.Tick(w.now)
		got := collect(cli)
		sid := cli.e.Connect(w.now, srv.addr)
		w.runUntil(Time(time.Second), func() bool { return len(got.up) == 1 })
		warm, err := cli.e.StartCall(w.now, sid, 1, []byte("warm"), nil, Never, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.runUntil(w.now+Time(time.Second), func() bool { _, ok := got.done[warm]; return ok })

		// What the attacker saw: the warm call's last datagram.
		num, tok, _ := sniffServerToken(w, cli.addr)()
		cs := cli.e.session(sid).c
		seenSeq, seenReq := cs.txSeq, uint64(0)

		id, err := cli.e.StartCall(w.now, sid, 1, []byte("pay once"), nil, Never, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.runUntil(w.now+Time(time.Second), func() bool { return runs == 2 })
		w.runFor(Time(r.Int64N(int64(3 * ms)))) // the attack comes at any moment while the handler runs
		resets := []wire.Header{
			{Code: wire.CodeServerClosing},
			{Code: wire.CodeServerClosing, MsgSize: r.Uint32()},
			{Code: wire.CodeUnknownSession, MsgSize: ^uint32(0)},
			{Code: wire.CodeUnknownSession, MsgSize: ^uint32(0), TxSeq: seenSeq, ReqNum: seenReq},
			{Code: wire.CodeStaleToken, MsgSize: ^uint32(0), TxSeq: seenSeq, ReqNum: 1},
		}
		dropped := cli.e.Stats().DropStale
		for _, h := range resets {
			h.Type, h.Session, h.Token = wire.TypeReset, num, tok
			w.net.Send(int64(w.now), srv.addr, cli.addr, wire.AppendHeader(nil, &h))
			forged++
		}
		w.runFor(Time(time.Millisecond))
		if ev, ok := got.done[id]; ok {
			t.Fatalf("seed %d: a forged reset made the call fail with %v while its handler runs (not executed: %v, which the driver sends again)",
				seed, ev.Err, errors.Is(ev.Err, ErrNotExecuted))
		}
		if n := cli.e.Stats().DropStale - dropped; n < uint64(len(resets)) {
			t.Fatalf("seed %d: %d of %d forged resets dropped", seed, n, len(resets))
		}
		if err := srv.e.Respond(w.now, slow, 0, []byte("paid")); err != nil {
			t.Fatalf("seed %d: the handler cannot answer: %v", seed, err)
		}
		w.runUntil(w.now+Time(5*time.Second), func() bool { _, ok := got.done[id]; return ok })
		switch ev := got.done[id]; {
		case errors.Is(ev.Err, ErrNotExecuted):
			t.Fatalf("seed %d: a forged reset made the call fail with %v although its handler ran", seed, ev.Err)
		case ev.Err != nil || string(ev.Data) != "paid":
			t.Fatalf("seed %d: a forged reset ended the session: %v", seed, ev.Err)
		case runs != 2:
			t.Fatalf("seed %d: %d handler runs for 2 calls", seed, runs)
		}
	}
	t.Logf("%d forged resets, none believed", forged)
}

// sniffServerToken returns the server session number and token that the
// client's packets carry in clear: what anyone who saw one client packet
// knows. The harness reports only sizes, so it reads them from the
// server's table, which holds exactly that.
func sniffServerToken(w *world, _ netip.AddrPort) func() (num, tok uint32, ok bool) {
	return func() (num, tok uint32, ok bool) {
		for _, h := range w.hosts {
			for _, s := range h.e.sessions {
				if s != nil && s.s != nil {
					num, tok, ok = s.num, s.token, true
				}
			}
		}
		return num, tok, ok
	}
}
