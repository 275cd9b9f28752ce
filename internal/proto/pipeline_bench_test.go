package proto

import "testing"

// BenchmarkPipelined measures the engines with a full window of 64 calls
// in flight on one session, the rate benchmark's case: each round starts
// 64 calls, delivers their requests in one batch, answers them all and
// delivers the responses in one batch. The per-packet paths used to walk
// the session's slots and in-flight records (a deadline per packet, a
// search for a free slot or for the next to send), which made a call's
// cost grow with the window. Congestion control is off, as it is between
// same-host peers (Config.Uncongested).
func BenchmarkPipelined(b *testing.B) {
	const window = 64
	p := &pair{
		cli: New(Config{Random: seedRandom(1), Window: window, Credits: window, NoCongestionControl: true}),
		srv: New(Config{Random: seedRandom(2), Window: window, Credits: window}),
		now: 1, buf: make([]byte, 0, 2048),
	}
	p.sid = p.cli.Connect(p.now, serverAddr)
	p.pass(p.cli, clientAddr, p.srv)
	p.pass(p.srv, serverAddr, p.cli)
	drain(p.cli)
	drain(p.srv)
	req := make([]byte, 32)
	resps := make([][]byte, window)
	for i := range resps {
		resps[i] = make([]byte, 0, 64)
	}
	round := func() {
		p.now += 1000
		for i := range window {
			if _, err := p.cli.StartCall(p.now, p.sid, 1, req, resps[i][:0], Never, nil); err != nil {
				b.Fatal(err)
			}
		}
		p.pass(p.cli, clientAddr, p.srv)
		for ev, ok := p.srv.NextEvent(); ok; ev, ok = p.srv.NextEvent() {
			out := p.srv.Buffer(len(ev.Req.Data()))
			copy(out, ev.Req.Data())
			if err := p.srv.Respond(p.now, ev.Req, 0, out); err != nil {
				b.Fatal(err)
			}
		}
		p.pass(p.srv, serverAddr, p.cli)
		n := 0
		for ev, ok := p.cli.NextEvent(); ok; ev, ok = p.cli.NextEvent() {
			if ev.Type != EventResponse || ev.Err != nil {
				b.Fatalf("client event %+v", ev)
			}
			n++
		}
		if n != window {
			b.Fatalf("%d of %d calls completed", n, window)
		}
		p.cli.Tick(p.now)
		p.srv.Tick(p.now)
	}
	for range 20 {
		round()
	}
	b.ReportAllocs()
	for b.Loop() {
		round()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*window), "ns/call")
}

func drain(e *Engine) {
	for _, ok := e.NextEvent(); ok; _, ok = e.NextEvent() {
	}
}
