package proto

import (
	"net/netip"
	"testing"
)

// pair is a client and a server engine wired back to back, with no network
// in between: it measures the engine alone.
type pair struct {
	cli, srv *Engine
	sid      SessionID
	now      Time
	buf      []byte
	req      []byte
	resp     []byte
	packets  int
	bytes    int
}

func newPair(tb testing.TB, reqSize int) *pair {
	p := &pair{
		cli: New(Config{Random: seedRandom(1)}),
		srv: New(Config{Random: seedRandom(2)}),
		now: 1, buf: make([]byte, 0, 2048),
		req: make([]byte, reqSize), resp: make([]byte, 0, 2048),
	}
	p.sid = p.cli.Connect(p.now, serverAddr)
	p.pass(p.cli, clientAddr, p.srv)
	p.pass(p.srv, serverAddr, p.cli)
	for {
		ev, ok := p.cli.NextEvent()
		if !ok {
			tb.Fatal("no session-up event")
		}
		if ev.Type == EventSessionUp {
			break
		}
	}
	for _, ok := p.srv.NextEvent(); ok; _, ok = p.srv.NextEvent() {
	}
	return p
}

// pass delivers everything from has queued to to.
func (p *pair) pass(from *Engine, fromAddr netip.AddrPort, to *Engine) {
	pkts := from.Outgoing(p.now)
	p.now += 5000 // 5 µs each way: RTT samples as on a real network
	for _, pk := range pkts {
		p.buf = pk.AppendTo(p.buf[:0])
		p.packets++
		p.bytes += len(p.buf)
		to.Receive(p.now, fromAddr, p.buf)
	}
}

// roundTrip makes one call and answers it with a same-sized response built
// in a buffer from the engine's pool.
func (p *pair) roundTrip(tb testing.TB) { p.roundTripWith(tb, false) }

// roundTripWith answers with the request's own buffer if echo is set: the
// slot takes it over, with no copy.
func (p *pair) roundTripWith(tb testing.TB, echo bool) {
	p.now += 1000
	if _, err := p.cli.StartCall(p.now, p.sid, 1, p.req, p.resp, Never, nil); err != nil {
		tb.Fatal(err)
	}
	p.pass(p.cli, clientAddr, p.srv)
	ev := p.srv.TakeEvent() // in place, as the endpoint's loop takes them
	if ev == nil || ev.Type != EventRequest {
		tb.Fatalf("server event %+v", ev)
	}
	out := ev.Req.Data()
	if !echo {
		out = p.srv.Buffer(len(ev.Req.Data()))
		copy(out, ev.Req.Data())
	}
	if err := p.srv.Respond(p.now, ev.Req, 0, out); err != nil {
		tb.Fatal(err)
	}
	if ev := p.srv.TakeEvent(); ev != nil { // drained: the queue resets
		tb.Fatalf("server event %+v", ev)
	}
	p.pass(p.srv, serverAddr, p.cli)
	ev = p.cli.TakeEvent()
	if ev == nil || ev.Type != EventResponse || ev.Err != nil || len(ev.Data) != len(p.req) {
		tb.Fatalf("client event %+v", ev)
	}
	p.resp = ev.Data
	if ev := p.cli.TakeEvent(); ev != nil {
		tb.Fatalf("client event %+v", ev)
	}
	p.cli.Tick(p.now)
	p.srv.Tick(p.now)
}

func TestRoundTripZeroAllocs(t *testing.T) {
	for _, echo := range []bool{false, true} {
		p := newPair(t, 32)
		for range 100 { // warm up: slices reach their steady size
			p.roundTripWith(t, echo)
		}
		if allocs := testing.AllocsPerRun(1000, func() { p.roundTripWith(t, echo) }); allocs != 0 {
			t.Fatalf("a 32-byte round trip through both engines (echo %v) allocates %.2f times", echo, allocs)
		}
	}
}

// BenchmarkRoundTrip measures the engines alone: a 32-byte call from
// StartCall to its completion event, server handler included, no I/O.
func BenchmarkRoundTrip(b *testing.B) {
	p := newPair(b, 32)
	for range 100 {
		p.roundTrip(b)
	}
	p.packets, p.bytes = 0, 0
	b.ReportAllocs()
	b.SetBytes(64)
	cpu0 := cpuTime()
	for b.Loop() {
		p.roundTrip(b)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(p.packets)/float64(b.N), "pkts/op")
	// Every packet carries 32 payload bytes; the rest is header.
	b.ReportMetric(float64(p.bytes-32*p.packets)/float64(p.packets), "hdrB/pkt")
}

// srvToken is the token of the pair's server session.
func (p *pair) srvToken() uint32 {
	for _, s := range p.srv.sessions {
		if s != nil && s.s != nil {
			return s.token
		}
	}
	return 0
}
