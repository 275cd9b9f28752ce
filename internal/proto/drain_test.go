package proto

import (
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
	"github.com/erpc-go/erpc/internal/wire"
)

// drainWorld is a server and a client with a session up between them.
func drainWorld(t *testing.T) (w *world, srv, cli *host, got *collector, sid SessionID) {
	w = newWorld(t, 1, simnet.LinkConfig{Delay: 10 * time.Microsecond})
	srv = w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1)})
	cli = w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(2)})
	echoServer(srv)
	got = collect(cli)
	sid = cli.e.Connect(w.now, srv.addr)
	w.runUntil(100*ms, func() bool { return len(got.up) == 1 })
	return
}

func drainEventsOf(got *collector, sid SessionID) int {
	n := 0
	for _, ev := range got.events {
		if ev.Type == EventDraining && ev.Session == sid {
			n++
		}
	}
	return n
}

// TestDrainNoticeTellsClientOnce: Drain sends each server session's
// client an unasked notice; the client reports EventDraining once, within
// one trip, however many flagged packets follow, and the session goes on
// (calls on it still complete).
func TestDrainNoticeTellsClientOnce(t *testing.T) {
	w, srv, cli, got, sid := drainWorld(t)
	flagged, unflagged := 0, 0
	w.onSend = func(from, to netip.AddrPort, head, _ []byte) {
		var h wire.Header
		if _, err := h.Parse(head); err != nil || h.Type.FromClient() {
			return
		}
		if h.Flags&wire.FlagDraining != 0 {
			flagged++
		} else {
			unflagged++
		}
	}
	srv.e.Drain(w.now)
	w.runFor(ms)
	if n := drainEventsOf(got, sid); n != 1 {
		t.Fatalf("%d draining events after the notice, want 1", n)
	}
	for i := range 5 {
		if _, err := cli.e.StartCall(w.now, sid, 7, []byte("x"), nil, Never, i); err != nil {
			t.Fatal(err)
		}
	}
	w.runUntil(100*ms, func() bool { return len(got.done) == 5 })
	for _, ev := range got.done {
		if ev.Err != nil {
			t.Fatalf("call on a draining server's session: %v", ev.Err)
		}
	}
	if n := drainEventsOf(got, sid); n != 1 {
		t.Errorf("%d draining events after more flagged answers, want 1", n)
	}
	if flagged < 6 || unflagged != 0 {
		t.Errorf("server packets after Drain: %d flagged, %d not (want all flagged, >= 6)", flagged, unflagged)
	}
}

// TestDrainFlagWithoutNotice: when the notice is lost, the next answer's
// flag tells the client.
func TestDrainFlagWithoutNotice(t *testing.T) {
	w, srv, cli, got, sid := drainWorld(t)
	srv.e.Drain(w.now)
	if lost := len(srv.e.Outgoing(w.now)); lost != 1 {
		t.Fatalf("Drain queued %d packets, want the one notice", lost)
	}
	if n := drainEventsOf(got, sid); n != 0 {
		t.Fatalf("%d draining events with the notice lost", n)
	}
	if _, err := cli.e.StartCall(w.now, sid, 7, []byte("x"), nil, Never, 0); err != nil {
		t.Fatal(err)
	}
	w.runUntil(100*ms, func() bool { return len(got.done) == 1 })
	if n := drainEventsOf(got, sid); n != 1 {
		t.Errorf("%d draining events after a flagged answer, want 1", n)
	}
}

// TestDrainNoticeNeedsClientToken: a notice without the client's token
// (a blind forgery) is dropped.
func TestDrainNoticeNeedsClientToken(t *testing.T) {
	w, srv, cli, got, sid := drainWorld(t)
	h := wire.Header{Type: wire.TypePong, Flags: wire.FlagDraining, Code: wire.CodeDraining, Session: sid.Num(), Token: sid.token() + 1}
	cli.e.Receive(w.now, srv.addr, pkt(h, nil))
	w.runFor(ms)
	if n := drainEventsOf(got, sid); n != 0 {
		t.Errorf("a notice with the wrong token made %d draining events", n)
	}
}
