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

// ixTotals sums the faults TestSimInterplay injects, so it can check they
// happened.
type ixTotals struct {
	seeds, calls, ok, notExec, reissued, failed, canceled, lost                        atomic.Int64
	srvRestarts, cliRestarts, natMoves, ipMoves, portReuse, abandons                   atomic.Int64
	retries, migrations, challenges, reaped, badCookies, spentCookies, held            atomic.Int64
	dupd, maxLatencyMs, replays, halfMig, partitions, maxRatio, maxRatioSeed, selfDial atomic.Int64
}

type ixCall struct {
	tag      uint64
	attempt  uint64 // bumped on reissue
	req      []byte
	client   int
	cinc     int // client incarnation that started it
	sess     SessionID
	started  Time
	done     int
	err      error
	lost     bool // its client process restarted before it completed
	reissued bool
	// attempts proven not executed
	notExec map[uint64]bool
}

// TestSimInterplay combines the features that landed together: a server
// under half-open pressure (small MaxHalfOpen, a trickle of forged
// connects), so retries and cookies happen; several clients behind NATs
// that move them to new ports and IPs and hand freed ports to other
// clients; client and server restarts; abandoned connects; cancellations
// and slow handlers; and a network that loses, duplicates and holds
// datagrams back by many RTOs.
func TestSimInterplay(t *testing.T) {
	var tot ixTotals
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) { runInterplay(t, seed, &tot) })
	})
	t.Logf("%d seeds: calls %d ok %d notExec %d reissued %d failed %d canceled %d lost %d; srvRestarts %d cliRestarts %d natMoves %d (ip %d, reuse %d) abandons %d; retries %d migrations %d challenges %d reaped %d badCookies %d spent %d; net held %d dup %d replays %d; half-open migrations %d; max latency %d ms; max latency/FailureTimeout %d%% (seed %d); seeds where the server dials itself %d",
		tot.seeds.Load(), tot.calls.Load(), tot.ok.Load(), tot.notExec.Load(), tot.reissued.Load(), tot.failed.Load(), tot.canceled.Load(), tot.lost.Load(),
		tot.srvRestarts.Load(), tot.cliRestarts.Load(), tot.natMoves.Load(), tot.ipMoves.Load(), tot.portReuse.Load(), tot.abandons.Load(),
		tot.retries.Load(), tot.migrations.Load(), tot.challenges.Load(), tot.reaped.Load(), tot.badCookies.Load(), tot.spentCookies.Load(),
		tot.held.Load(), tot.dupd.Load(), tot.replays.Load(), tot.halfMig.Load(), tot.maxLatencyMs.Load(), tot.maxRatio.Load(), tot.maxRatioSeed.Load(), tot.selfDial.Load())
	if t.Failed() || tot.seeds.Load() < 50 {
		return
	}
	for _, f := range []struct {
		what string
		n    int64
	}{
		{"successful calls", tot.ok.Load()}, {"not executed", tot.notExec.Load()}, {"server restarts", tot.srvRestarts.Load()},
		{"client restarts", tot.cliRestarts.Load()}, {"ip moves", tot.ipMoves.Load()}, {"port reuse", tot.portReuse.Load()},
		{"abandons", tot.abandons.Load()}, {"retries", tot.retries.Load()}, {"migrations", tot.migrations.Load()},
		{"reaped", tot.reaped.Load()}, {"held back", tot.held.Load()}, {"canceled", tot.canceled.Load()},
	} {
		if f.n == 0 {
			t.Errorf("no %s", f.what)
		}
	}
}

// TestSimInterplayCorrupt: TestSimInterplay's world, where the network also
// delivers copies of 5 % of the datagrams with one to three bits flipped in
// their first 64 bytes.
func TestSimInterplayCorrupt(t *testing.T) {
	var tot ixTotals
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) { runInterplayMut(t, seed, &tot, true) })
	})
	t.Logf("%d seeds: calls %d ok %d", tot.seeds.Load(), tot.calls.Load(), tot.ok.Load())
}

func runInterplay(t *testing.T, seed uint64, tot *ixTotals) { runInterplayMut(t, seed, tot, false) }

// runInterplayMut: with mutate, the network also delivers corrupted
// copies of some datagrams; then only what must hold on any input is
// checked (no panic, every call completes once and in bounded time, no
// leak), not at-most-once, which a corrupted request number can defeat.
func runInterplayMut(t *testing.T, seed uint64, tot *ixTotals, mutate bool) {
	name := "TestSimInterplay"
	if mutate {
		name = "TestSimInterplayCorrupt"
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s\nreplay: go test ./internal/proto -run '^%s$' -sim.seed=%d -v",
			seed, fmt.Sprintf(format, args...), name, seed)
	}
	soft := func(format string, args ...any) {
		t.Helper()
		if !mutate {
			fail(format, args...)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x1417))
	pick := func(v ...float64) float64 { return v[rng.IntN(len(v))] }
	link := simnet.LinkConfig{
		Loss:         pick(0, 0.01, 0.05, 0.2),
		Dup:          pick(0.02, 0.05, 0.1),
		Reorder:      pick(0.02, 0.1),
		Delay:        time.Duration(pick(5, 50, 500, 3000)*(0.5+rng.Float64())) * time.Microsecond,
		Jitter:       time.Duration(rng.IntN(20)) * time.Microsecond,
		ReorderDelay: time.Duration(pick(5, 50, 300, 1500)) * time.Millisecond,
	}
	w := newWorld(t, seed, link)
	failure := time.Duration(pick(200, 1000)) * time.Millisecond
	base := Config{
		Window: []int{1, 2, 8}[rng.IntN(3)], Credits: []int{1, 4, 32}[rng.IntN(3)],
		FailureTimeout: failure, KeepaliveInterval: time.Duration(pick(100, 300, 1000)) * time.Millisecond,
		IdleTimeout: time.Duration(pick(150, 2000)) * time.Millisecond,
		Paths:       []int{1, 1, 2, 4}[rng.IntN(4)],
	}
	maxHalf := 2 + rng.IntN(3)
	halfTO := time.Duration(pick(30, 100, 300, 1000)) * time.Millisecond
	maxSess := []int{0, 0, 6, 10}[rng.IntN(4)]
	srvInc := uint64(0)
	srvCfg := func() Config {
		c := base
		c.Paths = 1
		c.MaxHalfOpen = maxHalf
		c.HalfOpenTimeout = halfTO
		c.MaxSessions = maxSess
		c.Random = seedRandom(seed<<8 | 0x80 | srvInc)
		c.CookieSeed[0], c.CookieSeed[1] = byte(seed), byte(srvInc+1)
		return c
	}
	srv := w.addHost("server", "10.0.0.1:1", srvCfg())

	// The NAT: clients hidden at 192.168.x, seen at 172.16.0.{1,2}:port.
	owner := map[netip.AddrPort]*host{} // external base address -> host
	extOf := map[*host]netip.AddrPort{}
	var freed []netip.AddrPort
	nextPort := uint16(40000)
	fresh := func(ip int) netip.AddrPort {
		nextPort += 10
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{172, 16, 0, byte(1 + ip)}), nextPort)
	}
	w.srcOf = func(h *host, p uint8) netip.AddrPort {
		if a, ok := extOf[h]; ok {
			owner[a] = h
			return pathAddr(a, p)
		}
		return pathAddr(h.addr, p)
	}
	w.route = func(to netip.AddrPort) *host {
		for p := uint16(0); p < 4 && p <= to.Port(); p++ {
			if h := owner[netip.AddrPortFrom(to.Addr(), to.Port()-p)]; h != nil {
				return h
			}
		}
		if h := w.byAddr[to.Addr()]; h != nil {
			if _, hidden := extOf[h]; !hidden {
				return h
			}
		}
		return nil
	}

	// The server: counts runs per (tag, attempt), answers at once or later.
	exec := map[uint64]int{}      // by tag
	execAt := map[[2]uint64]int{} // by tag and attempt
	var calls []*ixCall
	byTag := map[uint64]*ixCall{}
	srvStats := func() {
		st := srv.e.Stats()
		tot.retries.Add(int64(st.RetriesSent))
		tot.migrations.Add(int64(st.Migrations))
		tot.challenges.Add(int64(st.PathChallenges))
		tot.reaped.Add(int64(st.HalfOpenReaped))
		tot.badCookies.Add(int64(st.BadCookies))
		tot.spentCookies.Add(int64(st.SpentCookies))
	}
	srv.onEvent = func(ev Event) {
		if ev.Type != EventRequest {
			return
		}
		h := ev.Req
		d := h.Data()
		if len(d) < 16 {
			soft("request of %d bytes", len(d))
			_ = srv.e.Respond(w.now, h, 0, nil)
			return
		}
		tag, att := binary.LittleEndian.Uint64(d), binary.LittleEndian.Uint64(d[8:])
		if exec[tag]++; exec[tag] > 1 {
			soft("request %d ran %d times (attempt %d)", tag, exec[tag], att)
		}
		execAt[[2]uint64{tag, att}]++
		if c := byTag[tag]; c != nil && c.notExec[att] {
			soft("request %d attempt %d ran after the client was told it never executed", tag, att)
		}
		e := srv.e
		respond := func() {
			if srv.e != e {
				return
			}
			if err := e.Respond(w.now, h, 0, h.Data()); err != nil && !errors.Is(err, ErrRequestGone) {
				soft("respond: %v", err)
			}
		}
		if rng.IntN(3) == 0 {
			w.at(w.now+Time(rng.IntN(20_000))*Time(time.Microsecond), respond)
		} else {
			respond()
		}
	}
	var onSrvRestart func() // the server's own client sessions die with it
	restartSrv := func(graceful bool) {
		if graceful {
			srv.e.CloseAll(w.now)
			w.flush()
		}
		srvStats()
		srvInc++
		if onSrvRestart != nil {
			onSrvRestart()
		}
		tot.srvRestarts.Add(1)
		w.replace(srv, srvCfg())
	}
	for range 1 + rng.IntN(2) {
		g := rng.IntN(2) == 0
		w.at(Time(50+rng.IntN(1500))*Time(time.Millisecond), func() { restartSrv(g) })
	}

	// Late copies: the network keeps a copy of some datagrams and
	// delivers it much later (up to 3 s: across reaping, cookie buckets,
	// restarts and address changes).
	replay := pick(0, 0.01, 0.05)
	if mutate {
		replay = 0.05
	}
	replays := 0
	w.onSend = func(from, to netip.AddrPort, head, payload []byte) {
		if rng.Float64() >= replay || w.now > Time(4*time.Second) {
			return
		}
		d := append(append([]byte(nil), head...), payload...)
		if mutate {
			for range 1 + rng.IntN(3) {
				i := rng.IntN(min(len(d), 64))
				d[i] ^= byte(1 << rng.IntN(8))
			}
			w.net.Send(int64(w.now), from, to, d)
			return
		}
		replays++
		w.at(w.now+Time(rng.IntN(3000))*Time(time.Millisecond), func() { w.net.Send(int64(w.now), from, to, d) })
	}

	// A partition now and then.
	if rng.IntN(3) == 0 {
		cut, cutFor := Time(rng.IntN(2000))*Time(time.Millisecond), Time(50+rng.IntN(1500))*Time(time.Millisecond)
		w.at(cut, func() {
			w.net.SetDefault(simnet.LinkConfig{Down: true})
			tot.partitions.Add(1)
			w.at(w.now+cutFor, func() { w.net.SetDefault(link) })
		})
	}

	// Forged connects now and then: half-open pressure.
	forged := 0
	var forge func()
	forge = func() {
		if w.now > Time(2500*time.Millisecond) {
			return
		}
		for range 1 + rng.IntN(maxHalf+1) {
			from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 9, 0, byte(1 + rng.IntN(8))}), uint16(1+rng.IntN(4)))
			w.net.Send(int64(w.now), from, srv.addr, connectWith(uint32(rng.IntN(4)), uint32(rng.Uint32()|1), nil))
			forged++
		}
		w.at(w.now+Time(50+rng.IntN(400))*Time(time.Millisecond), forge)
	}
	w.at(Time(rng.IntN(20))*Time(time.Millisecond), forge)

	// The clients.
	type client struct {
		i     int
		h     *host
		inc   int
		sids  []SessionID
		down  map[SessionID]error
		calls map[CallID]*ixCall
		cfg   func() Config
	}
	var clients []*client
	nextTag := uint64(1)
	var start func(c *client, lc *ixCall, sid SessionID)
	connect := func(c *client) SessionID {
		sid := c.h.e.Connect(w.now, srv.addr)
		c.sids = append(c.sids, sid)
		return sid
	}
	start = func(c *client, lc *ixCall, sid SessionID) {
		binary.LittleEndian.PutUint64(lc.req[8:], lc.attempt)
		lc.cinc = c.inc
		id, err := c.h.e.StartCall(w.now, sid, 1, lc.req, nil, Never, nil)
		if err != nil {
			if errors.Is(err, ErrNoSession) {
				sid = connect(c)
				id, err = c.h.e.StartCall(w.now, sid, 1, lc.req, nil, Never, nil)
			}
			if err != nil && mutate {
				lc.done = 1 // a corrupted connect-ack may negotiate anything
				return
			}
			if err != nil {
				fail("start call: %v", err)
			}
		}
		lc.sess, lc.started = sid, w.now
		c.calls[id] = lc
		if rng.IntN(8) == 0 {
			inc := c.inc
			w.at(w.now+Time(rng.IntN(5000))*Time(time.Microsecond), func() {
				if c.inc == inc && c.h.e.Cancel(w.now, sid, id) {
					lc.done = -1 // completion event follows
				}
			})
		}
	}
	nclients := 2 + rng.IntN(3)
	selfClient := -1 // the server's own engine dials itself too: one engine, both roles
	if rng.IntN(2) == 0 {
		selfClient = nclients
		nclients++
	}
	for ci := range nclients {
		self := ci == selfClient
		c := &client{i: ci, down: map[SessionID]error{}, calls: map[CallID]*ixCall{}}
		c.cfg = func() Config {
			cfg := base
			cfg.Random = seedRandom(seed<<8 | uint64(ci)<<4 | uint64(c.inc))
			return cfg
		}
		if self {
			c.h = srv
			onSrvRestart = func() {
				for id, lc := range c.calls {
					lc.lost = true
					delete(c.calls, id)
					tot.lost.Add(1)
				}
				c.inc++
				c.sids = nil
			}
		} else {
			c.h = w.addHost(fmt.Sprintf("client%d", ci), fmt.Sprintf("192.168.0.%d:1", ci+1), c.cfg())
			extOf[c.h] = fresh(rng.IntN(2))
		}
		clients = append(clients, c)
		onClientEvent := func(ev Event) {
			switch ev.Type {
			case EventSessionDown:
				c.down[ev.Session] = ev.Err
			case EventResponse:
				lc := c.calls[ev.Call]
				if lc == nil {
					fail("completion of unknown call %d", ev.Call)
				}
				delete(c.calls, ev.Call)
				canceled := lc.done == -1
				if canceled {
					lc.done = 0
				}
				if lc.done++; lc.done > 1 {
					fail("call %d completed twice", lc.tag)
				}
				if lat := int64(time.Duration(w.now-lc.started) / time.Millisecond); lat > tot.maxLatencyMs.Load() {
					tot.maxLatencyMs.Store(lat)
				}
				if r := int64(100 * (w.now - lc.started) / Time(failure)); r > tot.maxRatio.Load() {
					tot.maxRatio.Store(r)
					tot.maxRatioSeed.Store(int64(seed))
				}
				if w.now-lc.started > Time(6*failure) {
					soft("call %d took %v to complete (%v)", lc.tag, time.Duration(w.now-lc.started), ev.Err)
				}
				switch {
				case ev.Err == nil:
					if canceled {
						soft("call %d canceled but succeeded", lc.tag)
					}
					if execAt[[2]uint64{lc.tag, lc.attempt}] != 1 {
						soft("call %d succeeded but attempt %d ran %d times", lc.tag, lc.attempt, execAt[[2]uint64{lc.tag, lc.attempt}])
					}
					tot.ok.Add(1)
				case errors.Is(ev.Err, ErrNotExecuted):
					tot.notExec.Add(1)
					if n := execAt[[2]uint64{lc.tag, lc.attempt}]; n != 0 {
						soft("call %d attempt %d reported never executed (%v), but it ran", lc.tag, lc.attempt, ev.Err)
					}
					lc.notExec[lc.attempt] = true
					if !lc.reissued && !canceled {
						lc.reissued, lc.done = true, 0
						lc.attempt++
						tot.reissued.Add(1)
						start(c, lc, connect(c))
					}
				case errors.Is(ev.Err, ErrCanceled):
					tot.canceled.Add(1)
				default:
					lc.err = ev.Err
					tot.failed.Add(1)
				}
			}
		}
		if self {
			serve := srv.onEvent
			srv.onEvent = func(ev Event) {
				switch {
				case ev.Type == EventRequest, ev.Type == EventRequestCanceled, ev.Type == EventSessionAccepted,
					ev.Type == EventSessionDown && ev.Server:
					serve(ev)
				default:
					onClientEvent(ev)
				}
			}
			tot.selfDial.Add(1)
		} else {
			c.h.onEvent = onClientEvent
		}
		at := Time(rng.IntN(5)) * Time(time.Millisecond)
		for range 2 + rng.IntN(6) {
			life := at
			var sid SessionID
			inc := -1
			w.at(life, func() { sid, inc = connect(c), c.inc })
			if rng.IntN(5) == 0 { // abandoned: closed before its ack, perhaps
				w.at(life+Time(rng.IntN(300))*Time(time.Microsecond), func() {
					if s := c.h.e.session(sid); c.inc == inc && s != nil && !s.up {
						tot.abandons.Add(1)
					}
					if c.inc == inc {
						_ = c.h.e.Close(w.now, sid)
					}
				})
			}
			for range rng.IntN(7) {
				size := 16 + rng.IntN(200)
				if rng.IntN(5) == 0 {
					size = 2000 + rng.IntN(20000)
				}
				lc := &ixCall{tag: nextTag, req: make([]byte, size), client: ci, notExec: map[uint64]bool{}}
				nextTag++
				for i := range lc.req {
					lc.req[i] = byte(rng.Uint32())
				}
				binary.LittleEndian.PutUint64(lc.req, lc.tag)
				calls = append(calls, lc)
				byTag[lc.tag] = lc
				w.at(life+Time(rng.IntN(10_000))*Time(time.Microsecond), func() {
					if c.inc != inc {
						sid = connect(c) // the process restarted: a new session
						inc = c.inc
					}
					start(c, lc, sid)
				})
			}
			end := life + Time(1+rng.IntN(60))*Time(time.Millisecond)
			w.at(end, func() {
				if c.inc == inc {
					_ = c.h.e.Close(w.now, sid)
				}
			})
			at = end + Time(rng.IntN(5000))*Time(time.Microsecond)
		}
		// A client restart: its calls are lost with it; session numbers
		// start from 0 again, same NAT address or not.
		if !self && rng.IntN(2) == 0 {
			w.at(Time(rng.IntN(400))*Time(time.Millisecond), func() {
				for id, lc := range c.calls {
					lc.lost = true
					delete(c.calls, id)
					tot.lost.Add(1)
				}
				c.inc++
				c.sids = nil
				tot.cliRestarts.Add(1)
				w.replace(c.h, c.cfg())
			})
		}
	}

	// NAT moves: a random client gets a new port, a new IP, or a port
	// another client left; the old mapping may keep delivering a while.
	var move func()
	move = func() {
		if w.now > Time(3*time.Second) {
			return
		}
		c := clients[rng.IntN(len(clients))]
		if c.h == srv { // the server's own client sessions stay put
			w.at(w.now+Time(1+rng.IntN(100))*Time(time.Millisecond), move)
			return
		}
		old := extOf[c.h]
		var na netip.AddrPort
		switch r := rng.IntN(3); {
		case r == 0 && len(freed) > 0:
			k := rng.IntN(len(freed))
			na = freed[k]
			freed = append(freed[:k], freed[k+1:]...)
			if owner[na] != nil && owner[na] != c.h {
				delete(owner, na)
			}
			tot.portReuse.Add(1)
		case r == 1:
			na = fresh(1 - int(old.Addr().As4()[3]-1))
		default:
			na = fresh(int(old.Addr().As4()[3] - 1))
		}
		if na.Addr() != old.Addr() {
			tot.ipMoves.Add(1)
		}
		tot.natMoves.Add(1)
		extOf[c.h] = na
		freed = append(freed, old)
		keep := rng.IntN(2) == 0
		if !keep {
			delete(owner, old)
		} else {
			w.at(w.now+Time(rng.IntN(50))*Time(time.Millisecond), func() {
				if owner[old] == c.h && extOf[c.h] != old {
					delete(owner, old)
				}
			})
		}
		w.at(w.now+Time(1+rng.IntN(100))*Time(time.Millisecond), move)
	}
	w.at(Time(rng.IntN(30))*Time(time.Millisecond), move)

	// Invariant checked at every step: no server session stays unconfirmed
	// past its due time, and the lists agree with the sessions.
	connectIP := map[*session]netip.Addr{}
	halfMig := 0
	checkServer := func() {
		e := srv.e
		var nHalf, nProven int
		for l := e.halfOpen.head; l != nil; l = l.s.halfNext {
			nHalf++
		}
		for l := e.provenOpen.head; l != nil; l = l.s.halfNext {
			nProven++
		}
		if nHalf != e.halfOpen.n || nProven != e.provenOpen.n || e.halfOpen.n > e.cfg.MaxHalfOpen {
			fail("half-open lists: %d/%d and %d/%d, bound %d", nHalf, e.halfOpen.n, nProven, e.provenOpen.n, e.cfg.MaxHalfOpen)
		}
		live := 0
		for _, s := range srv.e.sessions {
			if s != nil && s.s != nil {
				live++
			}
		}
		if live != e.serverSessions {
			fail("%d server sessions in the table, %d counted", live, e.serverSessions)
		}
		for _, s := range srv.e.sessions {
			if s != nil && s.s != nil {
				if ip, ok := connectIP[s]; !ok && !s.s.confirmed {
					connectIP[s] = s.peer.Addr()
				} else if ok && s.s.confirmed {
					if ip != s.peer.Addr() {
						halfMig++
					}
					delete(connectIP, s)
				}
			}
			if s == nil || s.s == nil {
				continue
			}
			if !s.s.confirmed {
				if s.s.unconfirmedIn == nil {
					fail("unconfirmed server session %d is on no reaper list", s.num)
				}
				if s.s.halfDue < w.now {
					fail("unconfirmed server session %d overdue by %v", s.num, time.Duration(w.now-s.s.halfDue))
				}
			} else if len(s.s.slots) != s.window {
				fail("confirmed server session %d has %d slots, window %d", s.num, len(s.s.slots), s.window)
			}
		}
	}
	limit := Time(10 * time.Minute)
	done := func() bool {
		if len(w.actions) > 0 {
			return false
		}
		for _, lc := range calls {
			if lc.done <= 0 && !lc.lost {
				return false
			}
		}
		return true
	}
	w.flush()
	for !done() {
		if !w.step(limit) {
			var stuck []uint64
			for _, lc := range calls {
				if lc.done <= 0 && !lc.lost {
					stuck = append(stuck, lc.tag)
				}
			}
			fail("nothing left to happen, calls never completed: %v", stuck)
		}
		checkServer()
	}
	for _, lc := range calls {
		if lc.lost {
			continue
		}
		if c := clients[lc.client]; lc.err != nil && c.down[lc.sess] == nil && lc.cinc == c.inc {
			soft("call %d failed (%v) on a session that did not end", lc.tag, lc.err)
		}
	}
	for _, c := range clients {
		for _, sid := range c.sids {
			_ = c.h.e.Close(w.now, sid)
		}
	}
	end := w.now + Time(time.Minute)
	w.flush()
	for {
		st := srv.e.Stats()
		if st.ServerSessions == 0 && st.HeldRequests == 0 {
			break
		}
		if !w.step(end) {
			fail("server sessions never ended: %+v", srv.e.Stats())
		}
		checkServer()
	}
	if st := srv.e.Stats(); st.HeldBytes != 0 || st.SavedBytes != 0 || st.PooledBytes > srv.e.cfg.PoolBytes || srv.e.halfOpen.n != 0 || srv.e.provenOpen.n != 0 || len(srv.e.byPeer) != 0 || len(srv.e.byClient) != 0 {
		fail("server holds state with no session left: %+v, byPeer %d byClient %d", st, len(srv.e.byPeer), len(srv.e.byClient))
	}
	for _, c := range clients {
		if st := c.h.e.Stats(); st.CreditsInUse != 0 || len(c.h.e.byRemote) != 0 {
			fail("client %s holds credits or remote keys: %+v, byRemote %d", c.h.name, st, len(c.h.e.byRemote))
		}
		if st := c.h.e.Stats(); st.ClientSessions != 0 || st.PendingCalls != 0 {
			fail("client %s holds state: %+v", c.h.name, st)
		}
	}
	// Requests proven unexecuted never ran, even late.
	for _, lc := range calls {
		for att := range lc.notExec {
			if execAt[[2]uint64{lc.tag, att}] != 0 {
				soft("call %d attempt %d proven not executed but ran", lc.tag, att)
			}
		}
	}
	srvStats()
	ns := w.net.Stats()
	tot.seeds.Add(1)
	tot.calls.Add(int64(len(calls)))
	tot.held.Add(int64(ns.Reordered))
	tot.dupd.Add(int64(ns.Duplicated))
	_ = forged
	tot.replays.Add(int64(replays))
	tot.halfMig.Add(int64(halfMig))
}
