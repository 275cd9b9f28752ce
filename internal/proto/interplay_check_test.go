package proto

import (
	"net/netip"
	"time"
)

// runAndCheck runs TestSimInterplay's world (see interplay_test.go) until
// every call completed and every session ended, checking the server at
// every step, then checks that nothing is left held and adds the seed to
// the totals.
func (ix *interplay) runAndCheck() {
	w, srv, fail, soft, tot := ix.w, ix.srv, ix.fail, ix.soft, ix.tot
	calls, clients, execAt, srvStats := ix.calls, ix.clients, ix.execAt, ix.srvStats

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
	tot.replays.Add(int64(ix.replays))
	tot.halfMig.Add(int64(halfMig))
}
