package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// startClients starts TestSimInterplay's clients (see interplay_test.go),
// the server's own engine among them in half the seeds, and schedules
// their sessions, calls, cancellations and restarts.
func (ix *interplay) startClients() {
	seed, tot, mutate, rng, w, srv := ix.seed, ix.tot, ix.mutate, ix.rng, ix.w, ix.srv
	fail, soft, base, failure := ix.fail, ix.soft, ix.base, ix.failure
	extOf, fresh, byTag, execAt := ix.extOf, ix.fresh, ix.byTag, ix.execAt
	nextTag := uint64(1)
	var start func(c *ixClient, lc *ixCall, sid SessionID)
	connect := func(c *ixClient) SessionID {
		sid := c.h.e.Connect(w.now, srv.addr)
		c.sids = append(c.sids, sid)
		return sid
	}
	start = func(c *ixClient, lc *ixCall, sid SessionID) {
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
		c := &ixClient{i: ci, down: map[SessionID]error{}, calls: map[CallID]*ixCall{}}
		c.cfg = func() Config {
			cfg := base
			cfg.Random = seedRandom(seed<<8 | uint64(ci)<<4 | uint64(c.inc))
			return cfg
		}
		if self {
			c.h = srv
			ix.onSrvRestart = func() {
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
		ix.clients = append(ix.clients, c)
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
				ix.calls = append(ix.calls, lc)
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
}
