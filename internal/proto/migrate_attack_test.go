package proto

import (
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
	"github.com/erpc-go/erpc/internal/wire"
)

// TestChallengeFloodCannotStarveMigration (found by review): the client's
// IP changes on a path whose round trip is longer than challengeGap,
// while an attacker that knows the server token (it saw a client packet)
// pings from an IP of its own every few hundred µs. With one outstanding
// challenge, each ping took it over after the gap, so the client's answer
// never matched and the call failed after the failure timeout (1999
// challenges, 0 migrations). The last two IPs' nonces now stay valid and
// a held-back IP is challenged next: the session moves and the call
// completes. Without the attack the same runs are the control.
func TestChallengeFloodCannotStarveMigration(t *testing.T) {
	for _, delay := range []time.Duration{500 * time.Microsecond, 2 * time.Millisecond, 5 * time.Millisecond} {
		for _, every := range []time.Duration{0, 100 * time.Microsecond, 500 * time.Microsecond} {
			w := newWorld(t, 1, simnet.LinkConfig{Delay: delay})
			srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1)})
			cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(2)})
			n := newNAT(w, cli)
			srv.onEvent = func(ev Event) {
				if ev.Type == EventRequest {
					_ = srv.e.Respond(w.now, ev.Req, 0, []byte("ok"))
				}
			}
			srv.e.Tick(w.now)
			got := collect(cli)
			sid := cli.e.Connect(w.now, srv.addr)
			w.runUntil(Time(time.Second), func() bool { return len(got.up) == 1 })
			num, tok, _ := sniffServerToken(w, cli.addr)()
			n.rebind(true, false)
			pings := 0
			if every > 0 {
				evil := addr("10.66.0.1:5")
				var spray func()
				spray = func() {
					h := wire.Header{Type: wire.TypePing, Session: num, Token: tok}
					w.net.Send(int64(w.now), evil, srv.addr, wire.AppendHeader(nil, &h))
					pings++
					w.at(w.now+Time(every), spray)
				}
				spray()
			}
			id, err := cli.e.StartCall(w.now, sid, 1, []byte("x"), nil, Never, nil)
			if err != nil {
				t.Fatal(err)
			}
			w.runUntil(w.now+Time(10*time.Second), func() bool { _, ok := got.done[id]; return ok })
			st := srv.e.Stats()
			if ev := got.done[id]; ev.Err != nil || st.Migrations != 1 {
				t.Fatalf("delay %v, a ping every %v: the call ended with %v after %v; server stats: %d challenges, %d migrations",
					delay, every, ev.Err, time.Duration(w.now), st.PathChallenges, st.Migrations)
			}
			if every > 0 && (pings < 2 || st.PathChallenges < 2) {
				t.Fatalf("delay %v: %d forged pings drew %d challenges: the flood did not happen", delay, pings, st.PathChallenges)
			}
			t.Logf("delay %v, a forged ping every %v: %d pings, %d challenges, migrated and answered after %v",
				delay, every, pings, st.PathChallenges, time.Duration(w.now))
		}
	}
}

// TestForgedSourceBoundary states where the protection against forged
// sources ends (found by review; see the wire package's threat model). A
// server session takes its client's packets, token included, from any
// port of the client's IP: a multipath client sprays over several source
// ports, and a NAT may move it to another. So a forger that has the
// server's token (it read a client packet) and can send from the client's
// IP (a neighbour behind the same NAT, or a spoofer the network lets use
// that IP) is taken for the client: its request runs, answered at its
// port, and its disconnect ends the session. From any other IP, the same
// packets run nothing, are answered only with a challenge, and end
// nothing.
func TestForgedSourceBoundary(t *testing.T) {
	for _, tt := range []struct {
		name  string
		from  netip.AddrPort
		taken bool
	}{
		{"another IP", addr("10.0.0.99:7"), false},
		{"another IP, the client's port", netip.AddrPortFrom(netip.MustParseAddr("10.0.0.3"), clientAddr.Port()), false},
		{"the client's IP, another port", netip.AddrPortFrom(clientAddr.Addr(), clientAddr.Port()+1000), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTServer(t, Config{Random: seedRandom(5)})
			ts.e.Receive(ts.now, tt.from, pkt(wire.Header{Type: wire.TypeReq, Session: ts.num, Token: ts.tok,
				ReqType: tReqType, MsgSize: 8, ReqNum: 1, TxSeq: 1}, make([]byte, 8)))
			names, evs := drainEvents(ts.e)
			for _, ev := range evs {
				if ev.Type == EventRequest {
					_ = ts.e.Respond(ts.now, ev.Req, 0, []byte("ok"))
				}
			}
			answers := sentPackets(t, ts.e.Outgoing(ts.now))
			ts.now += Time(2 * challengeGap)
			ts.e.Receive(ts.now, tt.from, pkt(wire.Header{Type: wire.TypeDisconnect, Session: ts.num, Token: ts.tok}, nil))
			names2, _ := drainEvents(ts.e)
			ts.e.Outgoing(ts.now)
			ran := len(names) == 1 && names[0] == "request"
			ended := len(names2) == 1 && names2[0] == "session-down"
			answered := len(answers) == 1 && answers[0].to == tt.from && answers[0].h.Type == wire.TypeResp
			challenged := len(answers) == 1 && answers[0].to == tt.from && answers[0].h.Type == wire.TypePathChallenge
			if tt.taken != ran || tt.taken != answered || tt.taken != ended || (!tt.taken && !challenged) {
				t.Fatalf("forged packets from %v (taken for the client: %v): events %v after a request, answered with %+v; events %v after a disconnect",
					tt.from, tt.taken, names, answers, names2)
			}
		})
	}
}
