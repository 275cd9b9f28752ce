package proto

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
	"github.com/erpc-go/erpc/internal/wire"
)

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

// TestReviewForgedResetClaimsNeverRan (promises 2 and 1, and "a forged
// source cannot end a session"): an off-path attacker that knows the
// server's session number and token -- carried in clear in every client
// packet, the knowledge the path challenge is built to withstand --
// spoofs the server's address and sends the client a reset. The client
// ends the session and fails the call whose handler already ran with
// ErrNotExecuted, which tells the driver it may send the request again.
func TestReviewForgedResetClaimsNeverRan(t *testing.T) {
	for _, kind := range []string{"closing", "unknown"} {
		t.Run(kind, func(t *testing.T) {
			w := newWorld(t, 1, simnet.LinkConfig{Delay: 50 * time.Microsecond})
			srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1)})
			cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(2)})
			runs := 0
			srv.onEvent = func(ev Event) {
				if ev.Type == EventRequest {
					runs++ // a slow handler: it has run, its answer is not out yet
				}
			}
			srv.e.Tick(w.now)
			got := collect(cli)
			sid := cli.e.Connect(w.now, srv.addr)
			w.runUntil(Time(time.Second), func() bool { return len(got.up) == 1 })
			id, err := cli.e.StartCall(w.now, sid, 1, []byte("pay once"), nil, Never, nil)
			if err != nil {
				t.Fatal(err)
			}
			w.runUntil(w.now+Time(time.Second), func() bool { return runs == 1 })
			num, tok, _ := sniffServerToken(w, cli.addr)()
			h := wire.Header{Type: wire.TypeReset, Session: num, Token: tok}
			if kind == "closing" {
				h.Code, h.ReqNum = wire.CodeServerClosing, 0
			} else {
				h.Code, h.MsgSize = wire.CodeUnknownSession, ^uint32(0)
			}
			w.net.Send(int64(w.now), srv.addr, cli.addr, wire.AppendHeader(nil, &h))
			w.runUntil(w.now+Time(5*time.Second), func() bool { _, ok := got.done[id]; return ok })
			if ev := got.done[id]; errors.Is(ev.Err, ErrNotExecuted) {
				// What erpc's driver does with it (call.go, completeCall):
				// send the request again on a new session.
				ranBefore := runs
				sid2 := cli.e.Connect(w.now, srv.addr)
				w.runUntil(w.now+Time(time.Second), func() bool { return len(got.up) == 2 })
				if _, err := cli.e.StartCall(w.now, sid2, 1, []byte("pay once"), nil, Never, nil); err != nil {
					t.Fatal(err)
				}
				w.runUntil(w.now+Time(time.Second), func() bool { return runs > ranBefore })
				t.Fatalf("a forged %s reset: the call failed with %v although its handler had run; resent as the driver does, the handler ran %d times",
					kind, ev.Err, runs)
			} else if ev.Err != nil {
				t.Fatalf("a forged %s reset ended the session: %v", kind, ev.Err)
			}
		})
	}
}

// TestReviewForgedSameIPOtherPort (promise 4): a forged source on the
// client's IP but another port (a spoofer that knows the client's IP, or
// a neighbour behind the same NAT IP), with the server's token, is taken
// as the client: its disconnect ends the session, its request runs and
// is answered at its port. TestForgedSourceCannotMoveSession only forges
// other IPs.
func TestReviewForgedSameIPOtherPort(t *testing.T) {
	ts := newTServer(t, Config{Random: seedRandom(5)})
	forged := netip.AddrPortFrom(clientAddr.Addr(), clientAddr.Port()+1000)
	ts.e.Receive(ts.now, forged, pkt(wire.Header{Type: wire.TypeReq, Session: ts.num, Token: ts.tok,
		ReqType: tReqType, MsgSize: 8, ReqNum: 1, TxSeq: 1}, make([]byte, 8)))
	names, _ := drainEvents(ts.e)
	ts.e.Outgoing(ts.now)
	ts.e.Receive(ts.now, forged, pkt(wire.Header{Type: wire.TypeDisconnect, Session: ts.num, Token: ts.tok}, nil))
	names2, _ := drainEvents(ts.e)
	if len(names) > 0 || len(names2) > 0 {
		t.Fatalf("forged packets from %v (client IP, other port): events %v after a request, %v after a disconnect",
			forged, names, names2)
	}
}
