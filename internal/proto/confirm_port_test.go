package proto

import (
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
	"github.com/erpc-go/erpc/internal/wire"
)

// TestLateConfirmFromMovedPortEndsNewcomer (review, interplay of port-reuse
// protection and first confirmation): client A connects from NAT port P
// and gets its ack; the NAT then moves A to port P', and A's confirming
// ping, sent from P', is lost. Only then (A has spoken from its new port,
// as TestSimSharedNAT's NAT requires before handing a port out) does the
// NAT give P to client B, whose first session has the same number (every
// engine numbers from 0). B connects from P and confirms. A's resent ping,
// from P', confirms A's session: confirm looks up the older session of
// the same number under A's *connect* address P, finds B's live one, last
// heard at P, and ends it. B never moved and never restarted; its session
// ends and its next call fails. The protection compares the old
// session's last address with the new session's connect address
// (serverSide.key.addr), not with where the confirming packet came from
// (serverSide.from).
func TestLateConfirmFromMovedPortEndsNewcomer(t *testing.T) {
	w := newWorld(t, 1, simnet.LinkConfig{Delay: 50 * time.Microsecond})
	srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1)})
	a := w.addHost("A", "192.168.0.2:1", Config{Random: seedRandom(2)})
	b := w.addHost("B", "192.168.0.3:1", Config{Random: seedRandom(3)})
	n := newSharedNAT(w)
	p, pMoved := addr("172.16.0.1:40000"), addr("172.16.0.1:41000")
	n.ext[a] = p
	echoServer(srv)
	gb := collect(b)
	aUp := false
	a.onEvent = func(ev Event) {
		if ev.Type == EventSessionUp {
			aUp = true
			// The NAT moves A before its confirming ping leaves; the
			// ping is lost on the way.
			n.ext[a] = pMoved
			w.net.SetLink(pMoved, srv.addr, simnet.LinkConfig{Down: true})
		}
	}
	srv.e.Tick(w.now)
	sa := a.e.Connect(w.now, srv.addr)
	w.runUntil(Time(time.Second), func() bool { return aUp })
	w.runFor(Time(100 * time.Microsecond)) // the ping has left from P', and is lost

	// A has spoken from P': the NAT gives P to B.
	n.ext[b] = p
	sb := b.e.Connect(w.now, srv.addr)
	if sb.Num() != sa.Num() {
		t.Fatalf("session numbers %d and %d: the scenario needs them equal", sa.Num(), sb.Num())
	}
	w.runUntil(w.now+Time(time.Second), func() bool {
		st := srv.e.Stats()
		return len(gb.up) == 1 && st.ServerSessions == 2 && st.HalfOpen == 1
	})
	// B is confirmed at P and A still half open. The path heals; A's
	// ping is resent from P'.
	w.net.SetLink(pMoved, srv.addr, simnet.LinkConfig{Delay: 50 * time.Microsecond})
	w.runFor(Time(50 * time.Millisecond))
	if st := srv.e.Stats(); st.HalfOpen != 0 {
		t.Fatalf("A's session never confirmed: %+v", st)
	}
	id, err := b.e.StartCall(w.now, sb, 1, []byte("b"), nil, Never, nil)
	if err != nil {
		t.Fatalf("B's session, live at the port it never left, is gone: %v (down: %v)", err, gb.down[sb])
	}
	w.runUntil(w.now+Time(5*time.Second), func() bool { _, ok := gb.done[id]; return ok })
	if err := gb.done[id].Err; err != nil {
		t.Fatalf("B, live at the port it never left, lost its session to A's late confirmation from another port: call failed with %v (B down: %v)", err, gb.down[sb])
	}
}

// TestAbandonedDisconnectEndsPortSuccessor (review; the same root cause as
// TestLateConfirmFromMovedPortEndsNewcomer, reached through abandon.go):
// client A connects from NAT port P and closes the session before the ack
// (a lost dial race). The NAT moves A to P' of the same IP and gives P to
// client B, whose first session has the same number; B connects and
// confirms at P. A's late ack then draws A's Disconnect (answerAbandoned),
// from P'. The Disconnect confirms A's half-open session before ending it
// (serverReceive: establish runs for every accepted packet), and confirm
// ends B's live session, filed under P and last heard there. The
// Disconnect meant to free one unused session ends an unrelated live one.
func TestAbandonedDisconnectEndsPortSuccessor(t *testing.T) {
	now := Time(1)
	srv := New(Config{Random: seedRandom(1)})
	a := New(Config{Random: seedRandom(2)})
	b := New(Config{Random: seedRandom(3)})
	p, pMoved := addr("172.16.0.1:40000"), addr("172.16.0.1:41000")
	deliver := func(to *Engine, from netip.AddrPort, ds []datagram) {
		for _, d := range ds {
			to.Receive(now, from, d.data)
		}
		drainEvents(to)
	}
	srv.Tick(now)
	sa := a.Connect(now, serverAddr)
	deliver(srv, p, sendAll(t, a, now))
	ackA := sendAll(t, srv, now)
	if err := a.Close(now, sa); err != nil { // abandoned before the ack
		t.Fatal(err)
	}
	drainEvents(a)
	sendAll(t, a, now)

	// B takes P, with the same session number, and confirms.
	sb := b.Connect(now, serverAddr)
	if sb.Num() != sa.Num() {
		t.Fatalf("session numbers %d and %d: the scenario needs them equal", sa.Num(), sb.Num())
	}
	now += Time(time.Millisecond)
	deliver(srv, p, sendAll(t, b, now))
	deliver(b, serverAddr, sendAll(t, srv, now))
	deliver(srv, p, sendAll(t, b, now)) // B's confirming ping
	deliver(b, serverAddr, sendAll(t, srv, now))
	if st := srv.Stats(); st.ServerSessions != 2 || st.HalfOpen != 1 {
		t.Fatalf("want B's session confirmed and A's half open: %+v", st)
	}

	// A's ack arrives late; A, now at P', answers with a disconnect.
	now += Time(time.Millisecond)
	deliver(a, serverAddr, ackA)
	dis := sendAll(t, a, now)
	if len(dis) != 1 || dis[0].h.Type != wire.TypeDisconnect {
		t.Fatalf("A answered its abandoned ack with %d packets, want one disconnect", len(dis))
	}
	deliver(srv, pMoved, dis)
	sendAll(t, srv, now)
	if !b.Alive(sb) {
		t.Fatal("B's session is gone at B's end")
	}
	id, err := b.StartCall(now, sb, 1, []byte("b"), nil, Never, nil)
	if err != nil {
		t.Fatal(err)
	}
	deliver(srv, p, sendAll(t, b, now))
	var got []Event
	for _, d := range sendAll(t, srv, now) {
		b.Receive(now, serverAddr, d.data)
	}
	for ev, ok := b.NextEvent(); ok; ev, ok = b.NextEvent() {
		got = append(got, ev)
	}
	if st := srv.Stats(); st.ServerSessions != 1 {
		t.Errorf("server has %d sessions after A's disconnect, want B's alone: %+v", st.ServerSessions, st)
	}
	for _, ev := range got {
		if ev.Type == EventResponse && ev.Call == id && ev.Err != nil {
			t.Fatalf("B's call failed: %v: A's abandoned-connect disconnect ended B's live session", ev.Err)
		}
	}
}
