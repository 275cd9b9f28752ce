package proto

import (
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// shareClient is a client session opened on a server engine by hand.
type shareClient struct {
	addr     netip.AddrPort
	num, tok uint32 // the server session's number and token
	seq      uint32
	marked   int // CRs that came back with FlagUnderShare
	crs      int
}

// shareServer opens one session per address on a fresh server engine.
func shareServer(t *testing.T, cfg Config, addrs ...string) (*Engine, []*shareClient) {
	t.Helper()
	e := New(cfg)
	var cs []*shareClient
	for i, a := range addrs {
		c := &shareClient{addr: addr(a)}
		e.Receive(1000, c.addr, connectPkt(tToken+uint32(i), tCliNum, 8))
		drainEvents(e)
		pkts := e.Outgoing(1000)
		var h wire.Header
		var ack wire.Connect
		payload, err := h.Parse(pkts[0].AppendTo(nil))
		if err != nil || h.Type != wire.TypeConnectAck || ack.Parse(payload) != nil {
			t.Fatalf("connect from %v answered with %+v (%v)", a, h, err)
		}
		c.num, c.tok = ack.Session, ack.Token
		cs = append(cs, c)
	}
	return e, cs
}

// send feeds the server packet idx of a large request of c and counts the
// share mark on the CR that answers it.
func (c *shareClient) send(t *testing.T, e *Engine, now Time, idx uint32) {
	t.Helper()
	const size = 64 * tDPP
	lo, hi := dataRange(idx, size, tDPP)
	c.seq++
	e.Receive(now, c.addr, pkt(wire.Header{Type: wire.TypeReq, Session: c.num, Token: c.tok, ReqType: tReqType,
		MsgSize: size, PktIndex: idx, TxSeq: c.seq, ReqNum: 1}, make([]byte, hi-lo)))
	drainEvents(e)
	for _, p := range e.Outgoing(now) {
		var h wire.Header
		if _, err := h.Parse(p.AppendTo(nil)); err != nil || h.Type != wire.TypeCR || p.To != c.addr {
			t.Fatalf("request packet answered with %+v to %v (%v)", h, p.To, err)
		}
		c.crs++
		if h.Flags&wire.FlagUnderShare != 0 {
			c.marked++
		}
	}
}

// TestShareMark: a server marks the replies to a session that sends a
// third of what another sends, not the other's, and never a lone
// session's, nor those of a peer it calls uncongested (same host), whose
// client runs no congestion control.
func TestShareMark(t *testing.T) {
	const step = Time(100 * time.Microsecond)
	run := func(cfg Config, both bool) (heavy, light *shareClient) {
		e, cs := shareServer(t, cfg, "10.0.0.2:7", "10.0.0.3:7")
		heavy, light = cs[0], cs[1]
		for i := range 60 { // 6 ms: the heavy session 3 packets a step, the light one 1
			now := Time(2000) + Time(i)*step
			for k := range 3 {
				heavy.send(t, e, now, uint32(i*3+k)%63)
			}
			if both {
				light.send(t, e, now, uint32(i)%63)
			}
		}
		return heavy, light
	}
	heavy, light := run(Config{}, true)
	t.Logf("heavy: %d of %d CRs marked; light: %d of %d", heavy.marked, heavy.crs, light.marked, light.crs)
	if heavy.crs != 180 || light.crs != 60 {
		t.Fatalf("the server answered %d and %d request packets, want 180 and 60", heavy.crs, light.crs)
	}
	if heavy.marked != 0 {
		t.Errorf("the heavy session got %d marks", heavy.marked)
	}
	if light.marked < light.crs-1 { // its first packet alone is the mean
		t.Errorf("the light session got %d marks on %d CRs", light.marked, light.crs)
	}
	if lone, _ := run(Config{}, false); lone.marked != 0 {
		t.Errorf("a lone session got %d marks", lone.marked)
	}
	sameHost := func(netip.AddrPort) bool { return true }
	if heavy, light := run(Config{Uncongested: sameHost}, true); heavy.marked+light.marked != 0 {
		t.Errorf("sessions of uncongested peers got %d marks", heavy.marked+light.marked)
	}
}

// TestShareMeterForgets: the shares are those of the last two epochs. A
// session that sent little is under its share while another sends more,
// and no longer once the other has been quiet for two epochs; and the
// sums stay those of the sessions' counts across epochs.
func TestShareMeterForgets(t *testing.T) {
	var m shareMeter
	var a, b sessionShare
	ep := Time(1) << shareEpochShift
	for i := range 30 { // three epochs
		now := Time(i) * ep / 10
		m.add(now, &a, 3000)
		m.add(now, &b, 1000)
	}
	if !m.add(3*ep, &b, 1000) {
		t.Fatalf("b sends a third of a's bytes and is not under its share (a %+v, b %+v)", a, b)
	}
	if m.add(3*ep, &a, 3000) {
		t.Fatalf("a sends three times b's bytes and is under its share")
	}
	// The meter's sums are the sums over the sessions' counts.
	va, vb := a.prev+a.cur, b.prev+b.cur
	if sum, sq := m.prev+m.cur, m.prev2+2*m.cross+m.cur2; sum != va+vb || sq != va*va+vb*vb {
		t.Fatalf("sums %g and %g, want %g and %g", sum, sq, va+vb, va*va+vb*vb)
	}
	quiet := 5 * ep // a stops; b goes on alone
	if m.add(quiet, &b, 1000) || m.add(quiet+ep/2, &b, 1000) {
		t.Fatalf("after a's silence of two epochs, b is still under its share (a %+v, b %+v, meter %+v)", a, b, m)
	}
}
