package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
	"github.com/erpc-go/erpc/internal/wire"
)

// migrationTotals sums a migration test's seeds, so that the test can
// check the faults it is about really happened.
type migrationTotals struct {
	seeds, calls, ok, notRun, failed, ipMoves, portMoves, migrations, dropped, challenges, slowAcross atomic.Int64
}

func (m *migrationTotals) String() string {
	return fmt.Sprintf("%d seeds, %d calls: %d ok, %d failed (%d of them never ran); %d IP and %d port changes, "+
		"%d migrations, %d challenges, %d packets dropped before validation, %d handlers outlived an address change",
		m.seeds.Load(), m.calls.Load(), m.ok.Load(), m.failed.Load(), m.notRun.Load(), m.ipMoves.Load(), m.portMoves.Load(),
		m.migrations.Load(), m.challenges.Load(), m.dropped.Load(), m.slowAcross.Load())
}

// TestSimMigration: a client behind a NAT that gives it a new source IP,
// or a new port, at random moments, over links that lose, duplicate and
// reorder, with handlers slower than the rebinding period, over one or two
// paths. Every request id runs at most once, a call that reports
// ErrNotExecuted never ran, and since the server follows the client
// (migration) every call completes.
func TestSimMigration(t *testing.T) {
	var tot migrationTotals
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) { runMigration(t, seed, &tot, false) })
	})
	t.Log(&tot)
	if t.Failed() || tot.seeds.Load() < 50 {
		return
	}
	for name, n := range map[string]int64{"IP changes": tot.ipMoves.Load(), "port changes": tot.portMoves.Load(),
		"migrations": tot.migrations.Load(), "packets dropped before validation": tot.dropped.Load(),
		"handlers outliving an address change": tot.slowAcross.Load()} {
		if n == 0 {
			t.Errorf("no %s: the test does not exercise what it is about", name)
		}
	}
	if tot.ok.Load() != tot.calls.Load() {
		t.Errorf("%d of %d calls failed although the server follows its client", tot.calls.Load()-tot.ok.Load(), tot.calls.Load())
	}
}

// TestSimMigrationChurn: the same with addresses that change faster than
// a round trip, so that a challenge is often answered from an address
// already gone and calls may fail. Whatever fails, no request runs twice
// and no call whose handler ran says ErrNotExecuted.
func TestSimMigrationChurn(t *testing.T) {
	var tot migrationTotals
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) {
			if seed%4 == 0 { // a quarter of the seeds: the runs are long
				runMigration(t, seed, &tot, true)
			}
		})
	})
	t.Log(&tot)
	if !t.Failed() && tot.seeds.Load() >= 50 && (tot.ipMoves.Load() == 0 || tot.migrations.Load() == 0) {
		t.Errorf("no IP changes or no migrations: the test does not exercise what it is about")
	}
}

// runMigration runs one seed: 60 calls from a client behind a nat that
// rebinds every period on average (1 to 4 ms; with churn, 50 to 350 µs).
func runMigration(t *testing.T, seed uint64, tot *migrationTotals, churn bool) {
	runMigrationEvery(t, seed, tot, churn, 0)
}

// runMigrationEvery is runMigration, with the mean period between address
// changes set to rtts round trips of the seed's link instead if rtts > 0.
func runMigrationEvery(t *testing.T, seed uint64, tot *migrationTotals, churn bool, rtts float64) {
	r := rand.New(rand.NewPCG(seed, 0x316))
	link := simnet.LinkConfig{Delay: time.Duration(10+r.IntN(190)) * time.Microsecond}
	if r.IntN(4) > 0 { // a quarter of the seeds lose nothing at all
		link.Loss, link.Dup = r.Float64()*0.05, r.Float64()*0.03
		link.Reorder, link.ReorderDelay = r.Float64()*0.1, time.Duration(50+r.IntN(250))*time.Microsecond
	}
	period := Time(1+r.IntN(4)) * ms // mean time between address changes
	if churn {
		period = Time(50+r.IntN(300)) * Time(time.Microsecond)
	}
	if rtts > 0 {
		period = Time(rtts * float64(2*link.Delay))
	}
	paths := 1 + r.IntN(2)
	w := newWorld(t, seed, link)
	srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(seed)})
	cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(seed ^ 0xC11), Paths: paths})
	n := newNAT(w, cli)
	moves := func() int { return n.ipMoves + n.ptMoves }

	runs := map[uint64]int{}
	srv.e.Tick(w.now)
	srv.onEvent = func(ev Event) {
		if ev.Type != EventRequest {
			return
		}
		data := ev.Req.Data()
		id := binary.LittleEndian.Uint64(data)
		runs[id]++
		resp := append([]byte(nil), data[:8]...)
		delay := Time(0)
		if r.IntN(3) == 0 { // slower than the rebinding period
			delay = period + Time(r.Int64N(int64(2*period)))
		}
		before, req := moves(), ev.Req
		w.at(w.now+delay, func() {
			if srv.e.Respond(w.now, req, 0, resp) == nil && moves() != before {
				tot.slowAcross.Add(1)
			}
		})
	}
	got := collect(cli)
	w.runFor(Time(r.IntN(20)) * ms) // the server has been up a while
	sid := cli.e.Connect(w.now, srv.addr)
	w.runUntil(w.now+Time(time.Second), func() bool { return len(got.up) == 1 })

	const calls = 60
	ids := map[CallID]uint64{}
	for i := range calls {
		id := seed<<16 | uint64(i)
		req := make([]byte, 8+r.IntN(4000))
		binary.LittleEndian.PutUint64(req, id)
		w.at(w.now+Time(r.Int64N(int64(40*ms))), func() {
			c, err := cli.e.StartCall(w.now, sid, 1, req, nil, Never, nil)
			if err == nil {
				ids[c] = id
				return
			}
			ids[CallID(1<<62|id)] = id // the session is gone: the call never started
			got.done[CallID(1<<62|id)] = Event{Err: fmt.Errorf("%w: %w", ErrNotExecuted, err)}
		})
	}
	var rebind func()
	rebind = func() {
		if len(got.done) == calls {
			return
		}
		n.rebind(r.IntN(5) < 3, r.IntN(2) == 0)
		w.at(w.now+Time(r.Int64N(int64(2*period))), rebind)
	}
	w.at(w.now+Time(r.Int64N(int64(period))), rebind)
	w.runUntil(w.now+Time(30*time.Second), func() bool { return len(got.done) == calls })

	for c, ev := range got.done {
		id := ids[c]
		switch {
		case runs[id] > 1:
			t.Errorf("seed %d: request %x ran %d times", seed, id, runs[id])
		case errors.Is(ev.Err, ErrNotExecuted) && runs[id] != 0:
			t.Errorf("seed %d: call for request %x failed with %v, but its handler ran", seed, id, ev.Err)
		}
		switch {
		case ev.Err == nil:
			tot.ok.Add(1)
		case errors.Is(ev.Err, ErrNotExecuted):
			tot.notRun.Add(1)
			fallthrough
		default:
			tot.failed.Add(1)
			if testing.Verbose() && seed < 40 {
				t.Logf("seed %d: %v (moves %d)", seed, ev.Err, moves())
			}
		}
	}
	st := srv.e.Stats()
	tot.seeds.Add(1)
	tot.calls.Add(calls)
	tot.ipMoves.Add(int64(n.ipMoves))
	tot.portMoves.Add(int64(n.ptMoves))
	tot.migrations.Add(int64(st.Migrations))
	tot.dropped.Add(int64(st.DropUnvalidated))
	tot.challenges.Add(int64(st.PathChallenges))
}

// sent is one packet an engine sent, parsed.
type sent struct {
	to  netip.AddrPort
	h   wire.Header
	len int
}

func sentPackets(t *testing.T, pkts []Packet) []sent {
	t.Helper()
	var got []sent
	for _, p := range pkts {
		b := p.AppendTo(nil)
		var h wire.Header
		if _, err := h.Parse(b); err != nil {
			t.Fatalf("engine sent an unparsable packet: %v", err)
		}
		got = append(got, sent{p.To, h, len(b)})
	}
	return got
}

// TestForgedSourceCannotMoveSession: an attacker that has the session's
// token (it saw a client packet) sends packets of every kind from
// addresses of its own, answers the challenges it gets there as best it
// can (the nonce it saw, a guessed client token), and forges disconnects,
// while the real client keeps calling. Over many seeds: the attacker's
// packets are never executed or answered with data, each gets at most a
// challenge no larger than itself that does not carry the client's
// token, at most one per challengeGap, to that packet's source or to one
// whose packet the gap held back; the session never moves and never
// ends, and every real request is answered at the real client's address.
func TestForgedSourceCannotMoveSession(t *testing.T) {
	var forged, challenges, nonceReplays, realCalls, heldServed int
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 0xBAD))
		ts := newTServer(t, Config{Random: seedRandom(seed)})
		attackers := []netip.AddrPort{addr("10.9.9.9:7"), addr("10.0.0.3:7"), addr("192.168.1.1:4000")}
		var lastChallenge Time = -Time(time.Hour)
		seenNonce := map[netip.AddrPort]uint64{}
		held := map[netip.AddrPort]int{} // packets that drew no challenge, by source
		real := uint64(0)
		for range 200 {
			ts.now += Time(r.Int64N(int64(3 * ms)))
			from, size := clientAddr, 0
			var p []byte
			if r.IntN(2) == 0 {
				from = attackers[r.IntN(len(attackers))]
				from = netip.AddrPortFrom(from.Addr(), from.Port()+uint16(r.IntN(3)))
				h := wire.Header{Session: ts.num, Token: ts.tok, ReqNum: 1000 + r.Uint64N(100), TxSeq: r.Uint32(), ReqType: tReqType}
				switch r.IntN(6) {
				case 0:
					h.Type, h.MsgSize = wire.TypeReq, 8
					p = pkt(h, make([]byte, 8))
				case 1:
					h.Type = wire.TypeRFR
				case 2:
					h.Type = wire.TypeCancel
				case 3:
					h.Type = wire.TypePing
				case 4:
					h.Type = wire.TypeDisconnect
				default:
					h.Type, h.MsgSize = wire.TypePathResponse, r.Uint32()
					if n, ok := seenNonce[from]; ok && r.IntN(2) == 0 {
						h.ReqNum = n
						nonceReplays++
					}
					if h.MsgSize == tToken {
						h.MsgSize++
					}
				}
				if p == nil {
					p = pkt(h, nil)
				}
				forged++
			} else {
				real++
				p = ts.req(real, 16, 0, uint32(real))
			}
			size = len(p)
			ts.e.Receive(ts.now, from, p)
			names, evs := drainEvents(ts.e)
			for i, ev := range evs {
				switch {
				case ev.Type == EventRequest && from != clientAddr:
					t.Fatalf("seed %d: a forged packet from %v was executed", seed, from)
				case ev.Type == EventRequest:
					if err := ts.e.Respond(ts.now, ev.Req, 0, []byte("ok")); err != nil {
						t.Fatal(err)
					}
				default:
					t.Fatalf("seed %d: event %s after a packet from %v", seed, names[i], from)
				}
			}
			out := sentPackets(t, ts.e.Outgoing(ts.now))
			for _, o := range out {
				if o.to == clientAddr {
					if from != clientAddr {
						t.Fatalf("seed %d: a forged packet from %v made the server send %v to the client", seed, from, o.h.Type)
					}
					continue
				}
				// A challenge goes to the packet's source, or to one whose
				// packet the gap held back (it is owed one), and is no
				// larger than the packet it answers (a bare header).
				if (o.to != from && held[o.to] == 0) || o.h.Type != wire.TypePathChallenge || o.h.Token != 0 || o.h.MsgSize != 0 || o.len > size || o.len > wire.HeaderLen {
					t.Fatalf("seed %d: a packet from %v was answered with %v (%d bytes, token %x) to %v", seed, from, o.h.Type, o.len, o.h.Token, o.to)
				}
				if o.to != from {
					held[o.to]--
					heldServed++
				}
				if ts.now-lastChallenge < Time(challengeGap) {
					t.Fatalf("seed %d: challenges %v apart", seed, time.Duration(ts.now-lastChallenge))
				}
				lastChallenge = ts.now
				seenNonce[o.to] = o.h.ReqNum
				challenges++
			}
			if answered := slices.ContainsFunc(out, func(o sent) bool { return o.to == from }); from != clientAddr && !answered {
				held[from]++
			}
			if from == clientAddr && (len(out) != 1 || out[0].h.Type != wire.TypeResp || out[0].h.ReqNum != real) {
				t.Fatalf("seed %d: the real client's request %d was answered with %+v", seed, real, out)
			}
		}
		st := ts.e.Stats()
		if st.ServerSessions != 1 || st.Migrations != 0 {
			t.Fatalf("seed %d: %d sessions, %d migrations after the attack", seed, st.ServerSessions, st.Migrations)
		}
		realCalls += int(real)
	}
	if forged == 0 || challenges == 0 || nonceReplays == 0 || realCalls == 0 {
		t.Fatalf("forged %d packets, %d challenges, %d answers with a seen nonce, %d real calls: the attack did not happen",
			forged, challenges, nonceReplays, realCalls)
	}
	t.Logf("%d forged packets drew %d challenges (%d of them to a held-back address, %d answered with the nonce seen); %d real calls all answered",
		forged, challenges, heldServed, nonceReplays, realCalls)
}

// TestMigrationTable walks a move by hand: a packet from a new IP is
// dropped and challenged; an answer from another address, with another
// nonce or without the client's token does not move the session; the
// right answer does, after which the new IP is served and the old one is
// challenged like any other.
func TestMigrationTable(t *testing.T) {
	ts := newTServer(t, Config{Random: seedRandom(3)})
	moved := addr("10.0.7.7:9")
	feed := func(from netip.AddrPort, p []byte) []sent {
		ts.e.Receive(ts.now, from, p)
		for ev, ok := ts.e.NextEvent(); ok; ev, ok = ts.e.NextEvent() {
			if ev.Type == EventRequest {
				_ = ts.e.Respond(ts.now, ev.Req, 0, []byte("ok"))
			}
		}
		return sentPackets(t, ts.e.Outgoing(ts.now))
	}
	out := feed(moved, ts.req(1, 16, 0, 2))
	if len(out) != 1 || out[0].to != moved || out[0].h.Type != wire.TypePathChallenge || out[0].h.Session != tCliNum || out[0].h.TxSeq != 2 {
		t.Fatalf("a request from a new IP: %+v; want a challenge there", out)
	}
	nonce := out[0].h.ReqNum
	if out := feed(moved, ts.req(1, 16, 0, 3)); len(out) != 0 {
		t.Fatalf("a second packet within the gap: %+v; want nothing", out)
	}
	answer := func(n uint64, tok uint32) []byte {
		return pkt(wire.Header{Type: wire.TypePathResponse, Session: ts.num, Token: ts.tok, ReqNum: n, MsgSize: tok}, nil)
	}
	feed(addr("10.0.7.8:9"), answer(nonce, tToken))
	feed(moved, answer(nonce+1, tToken))
	feed(moved, answer(nonce, tToken+1))
	if st := ts.e.Stats(); st.Migrations != 0 || st.DropUnvalidated != 2 || st.PathChallenges != 1 {
		t.Fatalf("after wrong answers: %+v", st)
	}
	// A client on several paths shows up on another port of its new IP:
	// after the gap the challenge goes there too, with the same nonce, and
	// an answer from any port of that IP will do.
	ts.now += Time(challengeGap)
	otherPort := netip.AddrPortFrom(moved.Addr(), moved.Port()+1)
	out = feed(otherPort, ts.ctl(wire.TypePing, 0, 0, 3))
	if len(out) != 1 || out[0].to != otherPort || out[0].h.Type != wire.TypePathChallenge || out[0].h.ReqNum != nonce {
		t.Fatalf("a packet from another port of the new IP: %+v; want the same challenge there", out)
	}
	feed(otherPort, answer(nonce, tToken))
	if st := ts.e.Stats(); st.Migrations != 1 {
		t.Fatalf("after the right answer: %+v", st)
	}
	moved = otherPort
	out = feed(moved, ts.req(1, 16, 0, 4))
	if len(out) != 1 || out[0].to != moved || out[0].h.Type != wire.TypeResp {
		t.Fatalf("the request again from the new IP: %+v; want its response there", out)
	}
	ts.now += Time(challengeGap)
	out = feed(clientAddr, ts.ctl(wire.TypePing, 0, 0, 5))
	if len(out) != 1 || out[0].to != clientAddr || out[0].h.Type != wire.TypePathChallenge {
		t.Fatalf("a ping from the old IP: %+v; want a challenge there", out)
	}
	ts.e.CloseAll(ts.now)
	out = sentPackets(t, ts.e.Outgoing(ts.now))
	if len(out) != 1 || out[0].to != moved || out[0].h.Code != wire.CodeServerClosing {
		t.Fatalf("closing: %+v; want the notice at the new address", out)
	}
}

// TestChallengeGapSurvivesMigration (found by review): "at most one
// challenge per millisecond per session" holds right after a migration
// too. The gap used to be checked only while a nonce was outstanding, and
// a migration clears it, so a packet from the old IP (a late copy from
// the client) drew a second challenge 200 µs after the first.
func TestChallengeGapSurvivesMigration(t *testing.T) {
	ts := newTServer(t, Config{Random: seedRandom(3)})
	moved := addr("10.0.7.7:9")
	feed := func(from netip.AddrPort, p []byte) []sent {
		ts.e.Receive(ts.now, from, p)
		drainEvents(ts.e)
		return sentPackets(t, ts.e.Outgoing(ts.now))
	}
	out := feed(moved, ts.ctl(wire.TypePing, 0, 0, 2))
	if len(out) != 1 || out[0].h.Type != wire.TypePathChallenge {
		t.Fatalf("want a challenge, got %+v", out)
	}
	first := ts.now
	ts.now += Time(100 * time.Microsecond)
	feed(moved, pkt(wire.Header{Type: wire.TypePathResponse, Session: ts.num, Token: ts.tok, ReqNum: out[0].h.ReqNum, MsgSize: tToken}, nil))
	if ts.e.Stats().Migrations != 1 {
		t.Fatalf("no migration: %+v", ts.e.Stats())
	}
	ts.now += Time(100 * time.Microsecond)
	out = feed(clientAddr, ts.ctl(wire.TypePing, 0, 0, 3))
	if len(out) == 1 && out[0].h.Type == wire.TypePathChallenge && ts.now-first < Time(challengeGap) {
		t.Fatalf("two challenges of one session %v apart (limit %v)", time.Duration(ts.now-first), challengeGap)
	}
}
