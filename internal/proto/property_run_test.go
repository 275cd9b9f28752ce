package proto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

type simCall struct {
	sess     SessionID
	req      []byte
	canceled bool
	done     int
	ev       Event
}

type simResult struct {
	ok, failed, canceled, overloaded int
	sessionsDown                     int
	serverCancels                    int // EventRequestCanceled at the server
	retransmits, nacks               uint64
	simTime                          time.Duration
}

// runScenario runs sc and checks the protocol's promises:
//   - every call completes exactly once;
//   - a successful call got exactly the response the server computed for its
//     request, and the handler ran exactly once for it;
//   - no handler ever runs twice for one request;
//   - a call fails only for a reason it can have: its session failed, it
//     was canceled, or the server NACKed it (and then no handler ran);
//   - at the end no call, slot, credit, request or buffer is held, and every
//     session is gone on both sides once the clients close.
func runScenario(t *testing.T, sc scenario) simResult {
	top, _, _ := strings.Cut(t.Name(), "/")
	replay := fmt.Sprintf("replay: go test ./internal/proto -run '^%s$' -sim.seed=%d -v", top, sc.seed)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s\n%s", sc.seed, fmt.Sprintf(format, args...), replay)
	}
	rng := rand.New(rand.NewPCG(sc.seed, 0xC0FFEE))
	w := newWorld(t, sc.seed, sc.link)
	base := Config{
		Window: sc.window, Credits: sc.credits,
		FailureTimeout: sc.failure, IdleTimeout: 10 * time.Second,
		KeepaliveInterval: 2 * time.Second, Paths: sc.paths,
	}
	if sc.lean {
		base.Reliable = func(netip.AddrPort) bool { return true }
	}
	srvCfg := base
	srvCfg.MaxHeldRequests = sc.maxHeld
	srvCfg.Random = seedRandom(sc.seed)
	srv := w.addHost("server", "10.0.0.1:1", srvCfg)

	// The server: runs each handler inline or later, counts executions.
	execByTag := map[uint64]int{}
	execByReq := map[[2]uint64]int{}
	var serverCancels int
	srv.onEvent = func(ev Event) {
		if ev.Type == EventRequestCanceled {
			serverCancels++
		}
		if ev.Type != EventRequest {
			return
		}
		r := ev.Req.r
		key := [2]uint64{uint64(ev.Session), r.reqNum}
		if execByReq[key]++; execByReq[key] > 1 {
			fail("handler ran twice for session %x request %d", ev.Session, r.reqNum)
		}
		if tag, ok := tagOf(ev.Req.Data()); ok {
			execByTag[tag]++
		}
		resp := responseFor(ev.Req.Data())
		h := ev.Req
		respond := func() {
			err := srv.e.Respond(w.now, h, 0, resp)
			if err != nil && !errors.Is(err, ErrRequestGone) {
				fail("respond: %v", err)
			}
		}
		if rng.Float64() < sc.slowHandler {
			w.at(w.now+Time(rng.IntN(3000))*Time(time.Microsecond), respond)
		} else {
			respond()
		}
	}

	// The clients.
	type callKey struct {
		client int
		id     CallID
	}
	calls := map[callKey]*simCall{}
	var res simResult
	total := 0
	nextTag := uint64(1)
	budget := 6 << 20
	downSessions := map[SessionID]error{}
	type client struct {
		h    *host
		sids []SessionID
	}
	var clients []*client
	for c := range sc.clients {
		cfg := base
		cfg.Random = seedRandom(sc.seed + uint64(c) + 1)
		cl := &client{h: w.addHost(fmt.Sprintf("client%d", c), fmt.Sprintf("10.0.1.%d:1", c+1), cfg)}
		clients = append(clients, cl)
		for p := 1; p < sc.paths; p++ { // other paths, each a little longer: packets reorder across them
			slower := sc.link
			slower.Delay += time.Duration(p) * 20 * time.Microsecond
			w.net.SetLink(pathAddr(cl.h.addr, uint8(p)), srv.addr, slower)
			w.net.SetLink(srv.addr, pathAddr(cl.h.addr, uint8(p)), slower)
		}
		cl.h.onEvent = func(ev Event) {
			switch ev.Type {
			case EventSessionDown:
				downSessions[ev.Session] = ev.Err
			case EventResponse:
				sc := calls[callKey{c, ev.Call}]
				if sc == nil {
					fail("completion for unknown call %d", ev.Call)
				}
				sc.done++
				sc.ev = ev
				if sc.done > 1 {
					fail("call %d completed twice", ev.Call)
				}
			}
		}
		for range sc.sessions {
			sid := cl.h.e.Connect(w.now, srv.addr)
			cl.sids = append(cl.sids, sid)
			for range sc.calls {
				req := make([]byte, msgSize(rng, &budget))
				for i := range req {
					req[i] = byte(rng.Uint32())
				}
				if len(req) >= 8 {
					binary.LittleEndian.PutUint64(req, nextTag)
					nextTag++
				}
				start := w.now + Time(rng.IntN(2000))*Time(time.Microsecond)
				e, sid, c := cl.h.e, sid, c
				total++
				w.at(start, func() {
					id, err := e.StartCall(w.now, sid, 1, req, nil, Never, nil)
					if err != nil {
						if errors.Is(err, ErrNoSession) && downSessions[sid] != nil {
							total--
							return
						}
						fail("start call: %v", err)
					}
					call := &simCall{sess: sid, req: req}
					calls[callKey{c, id}] = call
					if rng.Float64() < sc.cancel {
						w.at(w.now+Time(rng.IntN(3000))*Time(time.Microsecond), func() {
							if e.Cancel(w.now, sid, id) {
								call.canceled = true
							}
						})
					}
				})
			}
		}
	}

	if sc.cutFor > 0 {
		w.at(sc.cutAt, func() {
			link := sc.link
			w.net.SetDefault(simnet.LinkConfig{Down: true})
			w.at(w.now+sc.cutFor, func() { w.net.SetDefault(link) })
		})
	}
	limit := Time(10 * time.Minute)
	allDone := func() bool {
		if len(calls) != total || len(w.actions) > 0 {
			return false
		}
		for _, c := range calls {
			if c.done == 0 {
				return false
			}
		}
		return true
	}
	w.runUntil(limit, allDone)

	// Every completion is accounted for.
	for id, c := range calls {
		ev := c.ev
		tag, tagged := tagOf(c.req)
		switch {
		case ev.Err == nil:
			if c.canceled {
				fail("call %d was canceled but succeeded", id)
			}
			if want := responseFor(c.req); !bytes.Equal(ev.Data, want) {
				fail("call %d: wrong response: %d bytes, want %d", id, len(ev.Data), len(want))
			}
			if tagged && execByTag[tag] != 1 {
				fail("call %d succeeded but its handler ran %d times", id, execByTag[tag])
			}
			res.ok++
		case errors.Is(ev.Err, ErrCanceled):
			if !c.canceled {
				fail("call %d reports canceled but was not", id)
			}
			res.canceled++
		case errors.Is(ev.Err, ErrOverloaded):
			if tagged && execByTag[tag] != 0 {
				fail("call %d was NACKed but its handler ran", id)
			}
			res.overloaded++
		default:
			if downSessions[c.sess] == nil {
				fail("call %d failed (%v) on a session that did not fail", id, ev.Err)
			}
			res.failed++
		}
		if tagged && execByTag[tag] > 1 {
			fail("call %d: handler ran %d times", id, execByTag[tag])
		}
	}
	if sc.cancel == 0 && sc.maxHeld >= 4096 && res.ok+res.failed != len(calls) {
		fail("unexpected outcomes: %+v", res)
	}
	if sc.cutFor == 0 && len(downSessions) > 0 {
		fail("a session failed on a network that never went down: %v", downSessions)
	}

	// Nothing is held once the calls are done and the handlers finished.
	w.runUntil(limit, func() bool {
		for _, cl := range clients {
			if st := cl.h.e.Stats(); st.BusySlots != 0 {
				return false // cancels still waiting for their acknowledgment
			}
		}
		return srv.e.Stats().HeldRequests == 0
	})
	for _, cl := range clients {
		st := cl.h.e.Stats()
		if st.PendingCalls != 0 || st.CreditsInUse != 0 {
			fail("client %s holds calls or credits: %+v", cl.h.name, st)
		}
		res.retransmits += st.Retransmits
	}
	// Closing the sessions frees the server's side, by disconnect or by the
	// idle sweep when the disconnect is lost.
	for _, cl := range clients {
		for _, sid := range cl.sids {
			_ = cl.h.e.Close(w.now, sid)
		}
	}
	w.runUntil(w.now+Time(time.Minute), func() bool { return srv.e.Stats().ServerSessions == 0 })
	st := srv.e.Stats()
	if st.HeldRequests != 0 || st.HeldBytes != 0 || st.PooledBytes > srv.e.cfg.PoolBytes {
		fail("server holds memory after all sessions closed: %+v", st)
	}
	for _, cl := range clients {
		if st := cl.h.e.Stats(); st.ClientSessions != 0 {
			fail("client %s still has sessions: %+v", cl.h.name, st)
		}
	}
	for _, err := range downSessions {
		if !errors.Is(err, ErrSessionClosed) { // failed, not closed by its client
			res.sessionsDown++
		}
	}
	res.serverCancels = serverCancels
	res.nacks = st.NacksSent
	res.simTime = time.Duration(w.now)
	if *simLog {
		t.Logf("seed %d: %+v scenario %+v", sc.seed, res, sc)
	}
	return res
}
