package proto

import (
	"net/netip"
	"strconv"
	"testing"
)

// BenchmarkRoundTripSessions is BenchmarkRoundTrip with the calls spread
// round robin over many sessions between the same two engines, as
// erpc-bench's sessions scenario spreads them (same host: Uncongested).
// With 20,000 sessions each call finds its session's state cold in the
// caches, so what a call touches per session, and the timer work each
// session's calls leave behind, show in the time per call. The client
// runs its timers while the call is out, as the endpoint's loop does on
// every turn: a call then moves its session's timer earlier.
func BenchmarkRoundTripSessions(b *testing.B) {
	for _, n := range []int{1, 20000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchSessions(b, n) })
	}
}

func benchSessions(b *testing.B, n int) {
	same := func(netip.AddrPort) bool { return true }
	p := &pair{
		cli: New(Config{Random: seedRandom(1), Uncongested: same}),
		srv: New(Config{Random: seedRandom(2), Uncongested: same}),
		now: 1, buf: make([]byte, 0, 2048),
		req: make([]byte, 32), resp: make([]byte, 0, 2048),
	}
	ids := make([]SessionID, n)
	// In batches below the server's bound on half-open sessions: each
	// ack asks for a confirmation, which the client's ping gives.
	for i := range ids {
		ids[i] = p.cli.Connect(p.now, serverAddr)
		if i%512 == 511 || i == n-1 {
			for range 2 {
				p.pass(p.cli, clientAddr, p.srv)
				p.pass(p.srv, serverAddr, p.cli)
			}
			drain(p.cli)
			drain(p.srv)
		}
	}
	next := 0
	call := func() {
		p.sid = ids[next]
		next = (next + 1) % n
		p.now += 1000
		if _, err := p.cli.StartCall(p.now, p.sid, 1, p.req, p.resp, Never, nil); err != nil {
			b.Fatal(err)
		}
		p.pass(p.cli, clientAddr, p.srv)
		p.cli.Tick(p.now)
		ev, _ := p.srv.NextEvent()
		out := p.srv.Buffer(len(ev.Req.Data()))
		copy(out, ev.Req.Data())
		if err := p.srv.Respond(p.now, ev.Req, 0, out); err != nil {
			b.Fatal(err)
		}
		p.pass(p.srv, serverAddr, p.cli)
		ev, _ = p.cli.NextEvent()
		if ev.Type != EventResponse || ev.Err != nil {
			b.Fatalf("client event %+v", ev)
		}
		p.resp = ev.Data
		p.cli.Tick(p.now)
		p.srv.Tick(p.now)
	}
	for range 2 * n {
		call()
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		call()
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
