package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// TestSimSharedNATHandshake is TestSimSharedNAT (same NAT model: a port a
// client leaves is handed out only once the client has sent from its new
// one) with two changes: half the time the NAT moves a client the moment
// its handshake completes, so its first packet with the server's token
// leaves from the new port, and the link loses 5 to 20 % of datagrams, so
// that packet is sometimes lost and resent after the old port has gone to
// another client with the same session number. No client's session may go
// down unless it closed it.
func TestSimSharedNATHandshake(t *testing.T) {
	var tot sharedNATTotals
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) { runSharedNATHandshake(t, seed, &tot, true) })
	})
	t.Logf("%d seeds, %d calls (%d ok, %d failed as their idle session ended), %d rebinds, %d idle sessions ended", tot.seeds.Load(), tot.calls.Load(),
		tot.ok.Load(), tot.neverRan.Load(), tot.rebinds.Load(), tot.idleEnded.Load())
}

// TestSimSharedNATLossy is TestSimSharedNAT with only the loss raised to 5
// to 20 %: the NAT hands a port out once its former holder has *sent* from
// its new one (the doc's condition), but that packet may be lost, so the
// server still files the former holder as last heard at the port when a
// newcomer with the same session number confirms there, and ends it.
func TestSimSharedNATLossy(t *testing.T) {
	var tot sharedNATTotals
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) { runSharedNATHandshake(t, seed, &tot, false) })
	})
	t.Logf("%d seeds, %d calls (%d ok, %d failed as their idle session ended), %d rebinds, %d idle sessions ended", tot.seeds.Load(), tot.calls.Load(),
		tot.ok.Load(), tot.neverRan.Load(), tot.rebinds.Load(), tot.idleEnded.Load())
}

func runSharedNATHandshake(t *testing.T, seed uint64, tot *sharedNATTotals, handshake bool) {
	name := "TestSimSharedNATLossy"
	if handshake {
		name = "TestSimSharedNATHandshake"
	}
	r := rand.New(rand.NewPCG(seed, 0x5a7))
	link := simnet.LinkConfig{Delay: time.Duration(10+r.IntN(90)) * time.Microsecond}
	if true {
		link.Loss, link.Dup = 0.05+r.Float64()*0.15, r.Float64()*0.02
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
				if _, moving := leaving[c.h]; handshake && !moving && len(pool) > 0 && r.IntN(2) == 0 {
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
				// The documented boundary (confirm): when the packet a
				// client sent from its new port is lost, the server may
				// still file it at the port the NAT handed on, and a
				// newcomer's confirmation there ends its session if it
				// has been silent since. Its calls then fail (never run,
				// or unproven), and it connects again, as the endpoint
				// does; nothing may run twice (checked below). The
				// deterministic cases that must not end a session are
				// TestLateConfirmFromMovedPortEndsNewcomer and
				// TestAbandonedDisconnectEndsPortSuccessor.
				if !c.closed[ev.Session] && errors.Is(ev.Err, ErrSessionReset) {
					tot.idleEnded.Add(1)
					if ev.Session == c.sid {
						connect(c)
					}
				} else if !c.closed[ev.Session] {
					t.Errorf("seed %d: %s's session went down: %v\nreplay: go test ./internal/proto -run '^%s$' -sim.seed=%d -v", seed, c.h.name, ev.Err, name, seed)
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
				case errors.Is(ev.Err, ErrNotExecuted) || errors.Is(ev.Err, ErrSessionReset):
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
