package proto

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// TestStartNowMatchesGeneralPath runs the same seeded traffic through two
// engine pairs, one with StartCall's one-packet path (startNow) and one
// that always goes through the backlog and pump, and requires the two to
// put the same bytes on the wire and report the same events at every
// step. The traffic mixes what decides between the paths: calls started
// while others wait in the backlog or for credits, requests and
// responses of several packets, lost packets and their retransmissions,
// cancellations and slow handlers, with and without congestion control.
func TestStartNowMatchesGeneralPath(t *testing.T) {
	fast := 0
	for seed := range uint64(60) {
		a, b := newLockstep(seed, false), newLockstep(seed, true)
		for step := range 400 {
			ta, tb := a.step(), b.step()
			if !bytes.Equal(ta, tb) {
				t.Fatalf("seed %d step %d: the paths differ\none-packet path: %q\ngeneral path:    %q", seed, step, ta, tb)
			}
		}
		if b.cli.fastStarts != 0 {
			t.Fatalf("seed %d: the general-path engine took the one-packet path", seed)
		}
		if a.cli.fastStarts == 0 || a.cli.fastStarts == a.started {
			t.Fatalf("seed %d: %d of %d calls took the one-packet path: both paths must be exercised", seed, a.cli.fastStarts, a.started)
		}
		if a.answered == 0 {
			t.Fatalf("seed %d: no call answered", seed)
		}
		fast += a.cli.fastStarts
	}
	t.Logf("%d calls took the one-packet path", fast)
}

// lockstep is a client and a server engine on a lossy wire, driven by its
// own seeded generator: two lockstep pairs with the same seed see the
// same traffic as long as they send the same packets.
type lockstep struct {
	cli, srv *Engine
	rng      *rand.Rand
	sid      SessionID
	now      Time
	held     []ReqHandle
	calls    []CallID
	reqs     map[CallID][]byte
	answered int // calls completed with a response, checked against their request
	started  int
	trace    []byte
	buf      []byte
}

func newLockstep(seed uint64, general bool) *lockstep {
	// Half the seeds with congestion control, whose window and pacer
	// hold packets back too.
	// Windows of a power of two and not (slotOf masks or divides).
	cfg := Config{MaxPacketSize: 240, Window: []int{4, 3, 5}[seed%3], Credits: 6, NoCongestionControl: seed%2 == 0}
	ccfg, scfg := cfg, cfg
	ccfg.Random, scfg.Random = seedRandom(seed), seedRandom(seed+1000)
	l := &lockstep{cli: New(ccfg), srv: New(scfg), rng: rand.New(rand.NewPCG(seed, 3)), now: 1, reqs: map[CallID][]byte{}}
	l.cli.generalStart = general
	l.sid = l.cli.Connect(l.now, serverAddr)
	for range 3 {
		l.deliver(l.cli, clientAddr, l.srv, 0)
		l.deliver(l.srv, serverAddr, l.cli, 0)
	}
	l.drainEvents()
	return l
}

// step advances the clock, starts and cancels calls, answers requests,
// runs both engines' timers and delivers what they send, and returns the
// step's trace: every packet's bytes and every event.
func (l *lockstep) step() []byte {
	l.trace = l.trace[:0]
	l.now = l.now.Add(time.Duration(1+l.rng.IntN(3000)) * time.Microsecond)
	for range l.rng.IntN(3) {
		req := make([]byte, l.rng.IntN(700))
		for i := range req {
			req[i] = byte(l.rng.Uint32())
		}
		id, err := l.cli.StartCall(l.now, l.sid, 7, req, nil, Never, nil)
		if err != nil {
			panic(err)
		}
		l.started++
		l.calls = append(l.calls, id)
		l.reqs[id] = req
	}
	if len(l.calls) > 0 && l.rng.IntN(10) == 0 {
		l.cli.Cancel(l.now, l.sid, l.calls[l.rng.IntN(len(l.calls))])
	}
	l.cli.Tick(l.now)
	l.deliver(l.cli, clientAddr, l.srv, 10)
	l.drainEvents()
	kept := l.held[:0]
	for _, h := range l.held {
		if l.rng.IntN(5) == 0 {
			kept = append(kept, h) // a slow handler
			continue
		}
		out := l.srv.Buffer(l.rng.IntN(700))
		copy(out, h.Data())
		_ = l.srv.Respond(l.now, h, 0, out)
	}
	l.held = kept
	l.srv.Tick(l.now)
	l.deliver(l.srv, serverAddr, l.cli, 10)
	l.drainEvents()
	return l.trace
}

// deliver sends from's packets to to, losing one in lossPct percent.
func (l *lockstep) deliver(from *Engine, fromAddr netip.AddrPort, to *Engine, lossPct int) {
	for _, p := range from.Outgoing(l.now) {
		l.buf = p.AppendTo(l.buf[:0])
		l.trace = append(l.trace, l.buf...)
		if l.rng.IntN(100) < lossPct {
			continue
		}
		to.Receive(l.now, fromAddr, l.buf)
	}
}

func (l *lockstep) drainEvents() {
	for ev, ok := l.srv.NextEvent(); ok; ev, ok = l.srv.NextEvent() {
		l.trace = fmt.Appendf(l.trace, "|srv %v %d", ev.Type, len(ev.Req.Data()))
		if ev.Type == EventRequest {
			l.held = append(l.held, ev.Req)
		}
	}
	for ev, ok := l.cli.NextEvent(); ok; ev, ok = l.cli.NextEvent() {
		l.trace = fmt.Appendf(l.trace, "|cli %v %d %d %x %v", ev.Type, ev.Call, ev.Status, ev.Data, ev.Err)
		if ev.Type == EventResponse {
			// The handler answers with the request's first bytes.
			if req := l.reqs[ev.Call]; ev.Err == nil {
				n := min(len(req), len(ev.Data))
				if !bytes.Equal(ev.Data[:n], req[:n]) {
					panic(fmt.Sprintf("call %d: the response does not echo its request", ev.Call))
				}
				l.answered++
			}
			delete(l.reqs, ev.Call)
			for i, id := range l.calls {
				if id == ev.Call {
					l.calls = append(l.calls[:i], l.calls[i+1:]...)
					break
				}
			}
		}
	}
}
