package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// sharedNAT puts several hosts behind one public IP, each at a port the
// test picks (and may change, or hand to another host).
type sharedNAT struct {
	w   *world
	ext map[*host]netip.AddrPort // a host's current external address
}

func newSharedNAT(w *world) *sharedNAT {
	n := &sharedNAT{w: w, ext: make(map[*host]netip.AddrPort)}
	w.srcOf = func(h *host, p uint8) netip.AddrPort {
		if a, ok := n.ext[h]; ok {
			return pathAddr(a, p)
		}
		return pathAddr(h.addr, p)
	}
	w.route = func(to netip.AddrPort) *host {
		for h, a := range n.ext {
			if to.Addr() == a.Addr() && to.Port() >= a.Port() && to.Port() < a.Port()+4 {
				return h
			}
		}
		if h := w.byAddr[to.Addr()]; h != nil {
			if _, hidden := n.ext[h]; !hidden {
				return h
			}
		}
		return nil
	}
	return n
}

// TestPortReuseAfterRebindKeepsLiveSession (found by review): client A's
// NAT mapping times out and A's packets come from a new port of the same
// IP, which the server takes without a challenge. The NAT then hands A's
// old port to client B behind the same public IP. B's first session has
// the same client session number as A's (both engines number from 0).
// B's confirm must not end A's live session, which the server still
// files under A's old port: A was last heard elsewhere. The server used to
// end it, and A's call, whose handler ran, failed.
func TestPortReuseAfterRebindKeepsLiveSession(t *testing.T) {
	w := newWorld(t, 1, simnet.LinkConfig{Delay: 50 * time.Microsecond})
	srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1)})
	a := w.addHost("A", "192.168.0.2:1", Config{Random: seedRandom(2)})
	b := w.addHost("B", "192.168.0.3:1", Config{Random: seedRandom(3)})
	n := newSharedNAT(w)
	n.ext[a] = addr("172.16.0.1:40000")
	runs := 0
	var slow []ReqHandle
	srv.onEvent = func(ev Event) {
		if ev.Type != EventRequest {
			return
		}
		runs++
		if string(ev.Req.Data()) == "slow" {
			slow = append(slow, ev.Req)
			return
		}
		_ = srv.e.Respond(w.now, ev.Req, 0, []byte("ok"))
	}
	srv.e.Tick(w.now)
	ga, gb := collect(a), collect(b)
	sa := a.e.Connect(w.now, srv.addr)
	w.runUntil(Time(time.Second), func() bool { return len(ga.up) == 1 })
	call := func(h *host, sid SessionID, body string) CallID {
		id, err := h.e.StartCall(w.now, sid, 1, []byte(body), nil, Never, nil)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	c1 := call(a, sa, "one")
	w.runUntil(w.now+Time(time.Second), func() bool { _, ok := ga.done[c1]; return ok })

	// A's mapping is rebound to a new port of the same IP; A is still there.
	n.ext[a] = addr("172.16.0.1:41000")
	c2 := call(a, sa, "slow") // its handler runs, slowly
	w.runUntil(w.now+Time(time.Second), func() bool { return len(slow) == 1 })

	// B gets A's old external port and opens its first session.
	n.ext[b] = addr("172.16.0.1:40000")
	sb := b.e.Connect(w.now, srv.addr)
	w.runUntil(w.now+Time(time.Second), func() bool { return len(gb.up) == 1 })
	if sb.Num() != sa.Num() {
		t.Fatalf("session numbers %d and %d: the scenario needs them equal", sa.Num(), sb.Num())
	}
	cb := call(b, sb, "b")
	w.runUntil(w.now+Time(time.Second), func() bool { _, ok := gb.done[cb]; return ok })

	// A's handler answers; A has not moved since.
	_ = srv.e.Respond(w.now, slow[0], 0, []byte("done"))
	w.runUntil(w.now+Time(5*time.Second), func() bool { _, ok := ga.done[c2]; return ok })
	if err := ga.done[c2].Err; err != nil {
		t.Fatalf("A's call (its handler ran; %d requests ran in all, each once) failed with %v; A's session down: %v; server stats %+v",
			runs, err, ga.down[sa], srv.e.Stats())
	}
}

// sharedNATTotals sums TestSimSharedNAT's seeds, so that it can check that
// the fault it is about happened.
type sharedNATTotals struct {
	seeds, calls, ok, rebinds, reusedConfirms atomic.Int64
	idleEnded, neverRan                       atomic.Int64 // the lossy variants' documented boundary
}

// TestSimSharedNAT: several clients behind one NAT IP, one or two paths
// each, over a lossy, duplicating, reordering link. The NAT rebinds a
// random client to a free port block every millisecond or so, and there
// is about one: each port a client leaves goes to another client next
// (once the client has spoken from its new port), and clients
// close their session and open a new one now and then: a new session at a
// port another client's live session was filed under, with the same
// session number (every engine numbers from 0), is frequent. No server
// ever ends a session its client still uses: every call completes, no
// client session goes down that its client did not close, and no handler
// runs twice.
func TestSimSharedNAT(t *testing.T) {
	var tot sharedNATTotals
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) {
			if seed%4 == 0 { // a quarter of the seeds: each runs several clients
				runSharedNAT(t, seed, &tot, natMode{name: "TestSimSharedNAT"})
			}
		})
	})
	t.Logf("%d seeds, %d calls (%d ok), %d rebinds, %d sessions confirmed at a port and number another client's live session was filed under",
		tot.seeds.Load(), tot.calls.Load(), tot.ok.Load(), tot.rebinds.Load(), tot.reusedConfirms.Load())
	if !t.Failed() && tot.seeds.Load() >= 10 && tot.reusedConfirms.Load() == 0 {
		t.Errorf("no session confirmed at a reused port with a reused number: the test does not exercise what it is about")
	}
}

// natClient is one client of runSharedNAT and what it has going on.
type natClient struct {
	h        *host
	sid      SessionID
	at       netip.AddrPort // where its current session's connect came from
	up       bool
	pending  int
	closed   map[SessionID]bool // sessions it closed on purpose
	sessions int
}

// natMode says how a run of runSharedNAT departs from TestSimSharedNAT's.
type natMode struct {
	name      string // the test, for the replay line
	lossy     bool   // 5 to 20 % loss: a client's first packet from a new port may be lost
	handshake bool   // the NAT may move a client the moment its handshake completes
	// boundary accepts the documented way a session may end (confirm): an
	// idle client whose first packet from its new port was lost is taken
	// for dead when a newcomer confirms at the port it left. Its calls
	// then fail (never run, or unproven) and it connects again, as the
	// endpoint does; nothing may run twice all the same.
	boundary bool
}

func runSharedNAT(t *testing.T, seed uint64, tot *sharedNATTotals, mode natMode) {
	r := rand.New(rand.NewPCG(seed, 0x5a7))
	link := simnet.LinkConfig{Delay: time.Duration(10+r.IntN(90)) * time.Microsecond}
	switch {
	case mode.lossy:
		link.Loss, link.Dup = 0.05+r.Float64()*0.15, r.Float64()*0.02
		link.Reorder, link.ReorderDelay = r.Float64()*0.1, time.Duration(20+r.IntN(100))*time.Microsecond
	case r.IntN(3) > 0:
		link.Loss, link.Dup = r.Float64()*0.03, r.Float64()*0.02
		link.Reorder, link.ReorderDelay = r.Float64()*0.1, time.Duration(20+r.IntN(100))*time.Microsecond
	}
	w := newWorld(t, seed, link)
	srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(seed)})
	n := newSharedNAT(w)
	nc := 3 + r.IntN(4)
	block := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.MustParseAddr("172.16.0.1"), uint16(40000+8*i))
	}
	// The port blocks no client holds. A block a client leaves goes back
	// only once the client has sent from its new one: a NAT hands out a
	// port after its mapping has been idle for the NAT's timeout, longer
	// than a live client's keepalive interval. (A NAT that drops every
	// mapping at once can give a port away before its former holder
	// speaks again: a session of the same number there may then end,
	// as the doc says.)
	pool := []int{nc}
	leaving := map[*host]int{}
	clients := make([]*natClient, nc)
	for i := range clients {
		h := w.addHost(fmt.Sprintf("c%d", i), fmt.Sprintf("192.168.0.%d:1", 2+i), Config{Random: seedRandom(seed<<8 | uint64(i+1)), Paths: 1 + r.IntN(2)})
		n.ext[h] = block(i)
		clients[i] = &natClient{h: h, closed: map[SessionID]bool{}}
	}
	natSrc := w.srcOf
	w.srcOf = func(h *host, p uint8) netip.AddrPort {
		if b, ok := leaving[h]; ok {
			pool = append(pool, b)
			delete(leaving, h)
		}
		return natSrc(h, p)
	}

	runs := map[uint64]int{}
	notRun := map[uint64]bool{} // calls that failed with ErrNotExecuted
	srv.e.Tick(w.now)
	srv.onEvent = func(ev Event) {
		if ev.Type != EventRequest {
			return
		}
		data := ev.Req.Data()
		runs[binary.LittleEndian.Uint64(data)]++
		resp, req := append([]byte(nil), data[:8]...), ev.Req
		delay := Time(0)
		if r.IntN(3) == 0 {
			delay = Time(r.Int64N(int64(3 * ms)))
		}
		w.at(w.now+delay, func() { _ = srv.e.Respond(w.now, req, 0, resp) })
	}

	const callsEach = 25
	issued, done, ok := 0, 0, 0
	var connect func(c *natClient)
	var call func(c *natClient, i int)
	connect = func(c *natClient) {
		c.sid, c.at, c.up = c.h.e.Connect(w.now, srv.addr), n.ext[c.h], false
		c.sessions++
	}
	call = func(c *natClient, i int) {
		if !c.up {
			w.at(w.now+Time(100*time.Microsecond), func() { call(c, i) })
			return
		}
		req := make([]byte, 8+r.IntN(3000))
		binary.LittleEndian.PutUint64(req, seed<<32|uint64(i))
		if _, err := c.h.e.StartCall(w.now, c.sid, 1, req, nil, Never, binary.LittleEndian.Uint64(req)); errors.Is(err, ErrNoSession) {
			w.at(w.now+Time(100*time.Microsecond), func() { call(c, i) }) // ended at the boundary: after the reconnect
			return
		} else if err != nil {
			t.Fatalf("seed %d: %s: StartCall: %v", seed, c.h.name, err)
		}
		c.pending++
	}
	for ci, c := range clients {
		c.h.onEvent = func(ev Event) {
			switch ev.Type {
			case EventSessionUp:
				c.up = true
				// The NAT moves the client right after its handshake,
				// before its first packet with the server's token leaves.
				if _, moving := leaving[c.h]; mode.handshake && !moving && len(pool) > 0 && r.IntN(2) == 0 {
					i := r.IntN(len(pool))
					leaving[c.h] = int(n.ext[c.h].Port()-40000) / 8
					n.ext[c.h] = block(pool[i])
					pool = append(pool[:i], pool[i+1:]...)
					tot.rebinds.Add(1)
				}
				for _, o := range clients {
					if o != c && o.up && o.at == c.at && o.sid.Num() == c.sid.Num() {
						// its first call or ping confirms it at o's port
						tot.reusedConfirms.Add(1)
					}
				}
			case EventSessionDown:
				if mode.boundary && !c.closed[ev.Session] && errors.Is(ev.Err, ErrSessionReset) {
					tot.idleEnded.Add(1)
					if ev.Session == c.sid {
						connect(c)
					}
				} else if !c.closed[ev.Session] {
					t.Errorf("seed %d: %s's session went down: %v\nreplay: go test ./internal/proto -run '^%s$' -sim.seed=%d -v", seed, c.h.name, ev.Err, mode.name, seed)
				}
			case EventResponse:
				c.pending--
				done++
				if errors.Is(ev.Err, ErrNotExecuted) {
					notRun[ev.Tag.(uint64)] = true
				}
				switch {
				case ev.Err == nil:
					ok++
				case mode.boundary && (errors.Is(ev.Err, ErrNotExecuted) || errors.Is(ev.Err, ErrSessionReset)):
					tot.neverRan.Add(1) // its session ended at the boundary above
				default:
					t.Errorf("seed %d: %s's call failed: %v", seed, c.h.name, ev.Err)
				}
			}
		}
		connect(c)
		for i := range callsEach {
			id := ci*callsEach + i
			issued++
			w.at(w.now+Time(r.Int64N(int64(40*ms))), func() { call(c, id) })
		}
	}
	// Every ~ms: rebind a client to the free block (the block it leaves
	// is the next one handed out), or have an idle client start over on a
	// new session, whose number its engine reuses.
	var churn func()
	churn = func() {
		if done == issued {
			return
		}
		c := clients[r.IntN(nc)]
		_, moving := leaving[c.h]
		switch {
		case r.IntN(4) == 0 && c.up && c.pending == 0:
			c.closed[c.sid] = true
			_ = c.h.e.Close(w.now, c.sid)
			connect(c)
		case len(pool) > 0 && !moving:
			i := r.IntN(len(pool))
			leaving[c.h] = int(n.ext[c.h].Port()-40000) / 8
			n.ext[c.h] = block(pool[i])
			pool = append(pool[:i], pool[i+1:]...)
			tot.rebinds.Add(1)
		}
		w.at(w.now+Time(200*time.Microsecond)+Time(r.Int64N(int64(2*ms))), churn)
	}
	w.at(w.now+Time(r.Int64N(int64(ms))), churn)
	w.runUntil(w.now+Time(30*time.Second), func() bool { return done == issued })

	for id := range notRun {
		if runs[id] != 0 {
			t.Fatalf("seed %d: request %x reported never executed, but it ran", seed, id)
		}
	}
	for id, k := range runs {
		if k > 1 {
			t.Errorf("seed %d: request %x ran %d times", seed, id, k)
		}
	}
	tot.seeds.Add(1)
	tot.calls.Add(int64(issued))
	tot.ok.Add(int64(ok))
}
