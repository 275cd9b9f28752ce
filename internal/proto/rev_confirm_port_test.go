package proto

import (
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// TestLateConfirmFromMovedPortEndsNewcomer (review, interplay of port-reuse
// protection and first confirmation): client A connects from NAT port P,
// gets its ack, but its confirming ping is lost; the NAT moves A to port P'
// and hands P to client B, whose first session has the same number (every
// engine numbers from 0). B connects from P and confirms. Then A's resent
// ping, from P', confirms A's session: confirm looks up the older session
// of the same number under A's *connect* address P, finds B's live one,
// last heard at P, and ends it. B never moved and never restarted; its
// session ends and its calls fail. The protection compares the old
// session's last address with the new one's connect address
// (serverSide.key.addr), not with where the confirming packet came from
// (serverSide.from): a session whose client has already left the port
// still ends whoever the NAT gave the port to. (The same happens when the
// confirming packet is an abandoned connect's Disconnect, abandon.go.)
func TestLateConfirmFromMovedPortEndsNewcomer(t *testing.T) {
	w := newWorld(t, 1, simnet.LinkConfig{Delay: 50 * time.Microsecond})
	srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1)})
	a := w.addHost("A", "192.168.0.2:1", Config{Random: seedRandom(2)})
	b := w.addHost("B", "192.168.0.3:1", Config{Random: seedRandom(3)})
	n := newSharedNAT(w)
	n.ext[a] = addr("172.16.0.1:40000")
	echoServer(srv)
	gb := collect(b)
	var sa, sb SessionID
	aUp := false
	a.onEvent = func(ev Event) {
		if ev.Type != EventSessionUp || aUp {
			return
		}
		aUp = true
		a.e.Outgoing(w.now) // A's confirming ping is lost
		// The NAT moves A to a new port and gives its old one to B.
		n.ext[a] = addr("172.16.0.1:41000")
		n.ext[b] = addr("172.16.0.1:40000")
		sb = b.e.Connect(w.now, srv.addr)
	}
	srv.e.Tick(w.now)
	sa = a.e.Connect(w.now, srv.addr)
	w.runUntil(Time(time.Second), func() bool { return len(gb.up) == 1 })
	if sb.Num() != sa.Num() {
		t.Fatalf("session numbers %d and %d: the scenario needs them equal", sa.Num(), sb.Num())
	}
	w.runFor(Time(20 * time.Millisecond)) // A's ping is resent, from its new port
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
