package proto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// lifeTotals sums, over all seeds, the faults the lifetime test is about,
// so that the test can check they happened: a fault made into a no-op (no
// restart, no late copy) must fail it rather than pass it vacuously.
type lifeTotals struct {
	seeds, calls, ok                   atomic.Int64
	crashes, closes                    atomic.Int64 // server restarts, by kind
	duplicated, heldBack               atomic.Int64 // datagrams the network duplicated or delayed by many RTOs
	lateDropped                        atomic.Int64 // packets for sessions that no longer exist, dropped
	lateConnects                       atomic.Int64 // sessions accepted beyond those clients opened
	notExecuted, reissued, failedCalls atomic.Int64
	confirmEnds                        atomic.Int64
}

// TestSimLifetimes: sessions open and close continually (client session
// numbers are reused), the server restarts, by crashing or by closing,
// several times a run, and the network duplicates datagrams and holds some
// back by up to 300 RTOs, so copies of connects and requests from earlier
// lives of a session number, and of the server, keep arriving. Handlers
// answer with their own request buffer. Across every session and server
// incarnation no request runs twice; every successful call gets its own
// bytes back; a call the engine reports as never executed has not run, and
// is sent once more on a new session (as the endpoint does); at the end
// the server holds nothing.
func TestSimLifetimes(t *testing.T) {
	var tot lifeTotals
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) { runLifetime(t, seed, &tot) })
	})
	if t.Failed() {
		return
	}
	t.Logf("%d seeds: %d calls (%d ok, %d failed, %d proven not executed, %d sent again); server crashes %d, closes %d; "+
		"datagrams duplicated %d, held back %d; late packets dropped %d; sessions from late connects %d; older sessions ended by a newer one %d",
		tot.seeds.Load(), tot.calls.Load(), tot.ok.Load(), tot.failedCalls.Load(), tot.notExecuted.Load(), tot.reissued.Load(),
		tot.crashes.Load(), tot.closes.Load(), tot.duplicated.Load(), tot.heldBack.Load(), tot.lateDropped.Load(),
		tot.lateConnects.Load(), tot.confirmEnds.Load())
	if tot.seeds.Load() < 50 {
		return // a replay of one seed: the totals below need many
	}
	for _, f := range []struct {
		what string
		n    int64
	}{
		{"server crashes", tot.crashes.Load()}, {"server closes", tot.closes.Load()},
		{"duplicated datagrams", tot.duplicated.Load()}, {"datagrams held back", tot.heldBack.Load()},
		{"late packets dropped", tot.lateDropped.Load()}, {"sessions from late connects", tot.lateConnects.Load()},
		{"calls proven not executed", tot.notExecuted.Load()}, {"successful calls", tot.ok.Load()},
	} {
		if f.n == 0 {
			t.Errorf("no %s in %d seeds: the test does not exercise what it is about", f.what, tot.seeds.Load())
		}
	}
}

type lifeCall struct {
	err      error // a failure other than not-executed
	tag      uint64
	req      []byte
	sess     SessionID
	client   int
	done     int
	reissued bool
}

func runLifetime(t *testing.T, seed uint64, tot *lifeTotals) {
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s\nreplay: go test ./internal/proto -run '^TestSimLifetimes$' -sim.seed=%d -v",
			seed, fmt.Sprintf(format, args...), seed)
	}
	rng := rand.New(rand.NewPCG(seed, 0x11FE))
	pick := func(v ...float64) float64 { return v[rng.IntN(len(v))] }
	link := simnet.LinkConfig{
		Loss:         pick(0, 0.01, 0.05),
		Dup:          pick(0.02, 0.05, 0.2),
		Reorder:      pick(0.02, 0.1),
		Delay:        time.Duration(5+rng.IntN(45)) * time.Microsecond,
		Jitter:       time.Duration(rng.IntN(20)) * time.Microsecond,
		ReorderDelay: time.Duration(pick(5, 50, 300)) * time.Millisecond, // many RTOs: the floor is 1 ms
	}
	w := newWorld(t, seed, link)
	base := Config{
		Window: []int{1, 2, 8}[rng.IntN(3)], Credits: []int{4, 32}[rng.IntN(2)],
		FailureTimeout: time.Second, KeepaliveInterval: 300 * time.Millisecond, IdleTimeout: 2 * time.Second,
	}
	incarnation := uint64(0)
	srvCfg := func() Config {
		c := base
		c.Random = seedRandom(seed<<8 | 0x80 | incarnation) // a new process: new tokens
		return c
	}
	srv := w.addHost("server", "10.0.0.1:1", srvCfg())

	// The server echoes every request with its own buffer, at once or a
	// little later, and counts runs per request over all its incarnations.
	exec := map[uint64]int{}
	var srvDrops, accepted int64
	srv.onEvent = func(ev Event) {
		switch ev.Type {
		case EventSessionAccepted:
			accepted++
		case EventSessionDown:
			if errors.Is(ev.Err, ErrSessionReset) { // a newer session of its client number was confirmed
				tot.confirmEnds.Add(1)
			}
		case EventRequest:
			h := ev.Req
			tag := binary.LittleEndian.Uint64(h.Data())
			if exec[tag]++; exec[tag] > 1 {
				fail("request %d ran %d times", tag, exec[tag])
			}
			e := srv.e
			respond := func() {
				if srv.e != e { // that process is gone
					return
				}
				if err := e.Respond(w.now, h, 0, h.Data()); err != nil && !errors.Is(err, ErrRequestGone) {
					fail("respond: %v", err)
				}
			}
			if rng.IntN(3) == 0 {
				w.at(w.now+Time(rng.IntN(5000))*Time(time.Microsecond), respond)
			} else {
				respond()
			}
		}
	}
	restart := func(graceful bool) {
		if graceful {
			srv.e.CloseAll(w.now)
			w.flush() // its closing resets go out before it exits
			tot.closes.Add(1)
		} else {
			tot.crashes.Add(1)
		}
		srvDrops += int64(srv.e.Stats().DropUnknownSession)
		incarnation++
		w.replace(srv, srvCfg())
	}
	for range 1 + rng.IntN(3) {
		graceful := rng.IntN(2) == 0
		w.at(Time(rng.IntN(300))*Time(time.Millisecond), func() { restart(graceful) })
	}

	// The clients live through several sessions each, one after another.
	type client struct {
		h     *host
		sids  []SessionID
		down  map[SessionID]error
		calls map[CallID]*lifeCall
	}
	var clients []*client
	var all []*lifeCall
	nextTag := uint64(1)
	connects := int64(0)
	connect := func(c *client) SessionID {
		sid := c.h.e.Connect(w.now, srv.addr)
		c.sids = append(c.sids, sid)
		connects++
		return sid
	}
	start := func(c *client, lc *lifeCall, sid SessionID) {
		id, err := c.h.e.StartCall(w.now, sid, 1, lc.req, nil, Never, nil)
		if err != nil {
			if errors.Is(err, ErrNoSession) && c.down[sid] != nil {
				id, err = c.h.e.StartCall(w.now, connect(c), 1, lc.req, nil, Never, nil)
			}
			if err != nil {
				fail("start call: %v", err)
			}
		}
		lc.sess = sid
		c.calls[id] = lc
	}
	for ci := range 1 + rng.IntN(3) {
		cfg := base
		cfg.Random = seedRandom(seed<<8 | uint64(ci))
		c := &client{h: w.addHost(fmt.Sprintf("client%d", ci), fmt.Sprintf("10.0.1.%d:1", ci+1), cfg),
			down: map[SessionID]error{}, calls: map[CallID]*lifeCall{}}
		clients = append(clients, c)
		c.h.onEvent = func(ev Event) {
			switch ev.Type {
			case EventSessionDown:
				c.down[ev.Session] = ev.Err
			case EventResponse:
				lc := c.calls[ev.Call]
				if lc == nil {
					fail("completion of unknown call %d", ev.Call)
				}
				delete(c.calls, ev.Call)
				if lc.done++; lc.done > 1 {
					fail("call %d completed twice", lc.tag)
				}
				switch {
				case ev.Err == nil:
					if !bytes.Equal(ev.Data, lc.req) {
						fail("call %d: %d bytes back, not its own %d", lc.tag, len(ev.Data), len(lc.req))
					}
					if exec[lc.tag] != 1 {
						fail("call %d succeeded but its handler ran %d times", lc.tag, exec[lc.tag])
					}
					tot.ok.Add(1)
				case errors.Is(ev.Err, ErrNotExecuted):
					tot.notExecuted.Add(1)
					if exec[lc.tag] != 0 {
						fail("call %d reported never executed (%v), but it ran", lc.tag, ev.Err)
					}
					if !lc.reissued { // as the endpoint does: once, on a new session
						lc.reissued, lc.done = true, 0
						tot.reissued.Add(1)
						start(c, lc, connect(c))
					}
				default: // checked once the session's down event has come too
					lc.err = ev.Err
					tot.failedCalls.Add(1)
				}
			}
		}
		at := Time(rng.IntN(5)) * Time(time.Millisecond)
		for range 2 + rng.IntN(6) {
			life := at
			var sid SessionID
			w.at(life, func() { sid = connect(c) })
			for range rng.IntN(7) {
				size := 8 + rng.IntN(200)
				if rng.IntN(5) == 0 {
					size = 2000 + rng.IntN(20000) // several packets
				}
				lc := &lifeCall{tag: nextTag, req: make([]byte, size), client: ci}
				nextTag++
				for i := range lc.req {
					lc.req[i] = byte(rng.Uint32())
				}
				binary.LittleEndian.PutUint64(lc.req, lc.tag)
				all = append(all, lc)
				w.at(life+Time(rng.IntN(10_000))*Time(time.Microsecond), func() { start(c, lc, sid) })
			}
			end := life + Time(1+rng.IntN(40))*Time(time.Millisecond)
			w.at(end, func() { _ = c.h.e.Close(w.now, sid) }) // pending calls may be cut short
			at = end + Time(rng.IntN(5000))*Time(time.Microsecond)
		}
	}

	limit := Time(10 * time.Minute)
	w.runUntil(limit, func() bool {
		if len(w.actions) > 0 {
			return false
		}
		for _, lc := range all {
			if lc.done == 0 {
				return false
			}
		}
		return true
	})
	for _, lc := range all {
		if c := clients[lc.client]; lc.err != nil && c.down[lc.sess] == nil {
			fail("call %d failed (%v) on a session that did not end", lc.tag, lc.err)
		}
	}
	// Close what is still open; then the server must end up holding
	// nothing, sessions from late connects included (the idle sweep).
	for _, c := range clients {
		for _, sid := range c.sids {
			_ = c.h.e.Close(w.now, sid)
		}
	}
	w.runUntil(w.now+Time(time.Minute), func() bool {
		st := srv.e.Stats()
		return st.ServerSessions == 0 && st.HeldRequests == 0
	})
	if st := srv.e.Stats(); st.HeldBytes != 0 || st.SavedBytes != 0 || st.PooledBytes > srv.e.cfg.PoolBytes {
		fail("server holds memory with no session left: %+v", st)
	}
	for _, c := range clients {
		if st := c.h.e.Stats(); st.ClientSessions != 0 || st.PendingCalls != 0 || st.CreditsInUse != 0 {
			fail("client %s holds state: %+v", c.h.name, st)
		}
		tot.lateDropped.Add(int64(c.h.e.Stats().DropUnknownSession))
	}
	ns := w.net.Stats()
	tot.seeds.Add(1)
	tot.calls.Add(int64(len(all)))
	tot.duplicated.Add(int64(ns.Duplicated))
	tot.heldBack.Add(int64(ns.Reordered))
	tot.lateDropped.Add(srvDrops + int64(srv.e.Stats().DropUnknownSession))
	tot.lateConnects.Add(max(accepted-connects, 0))
	if *simLog {
		t.Logf("seed %d: link %+v, %d calls, %d connects, %d accepted, net %+v", seed, link, len(all), connects, accepted, ns)
	}
}
