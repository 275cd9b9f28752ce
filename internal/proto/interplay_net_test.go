package proto

import (
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// The network of TestSimInterplay (see interplay_test.go): the NAT that
// hides the clients and moves them, late copies of datagrams, partitions
// and forged connects.

// hideClientsBehindNAT puts the clients at 192.168.x behind a NAT that
// shows them at 172.16.0.{1,2}:port.
func (ix *interplay) hideClientsBehindNAT() {
	w := ix.w
	owner := map[netip.AddrPort]*host{} // external base address -> host
	extOf := map[*host]netip.AddrPort{}
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
	ix.owner, ix.extOf, ix.fresh = owner, extOf, fresh
}

// keepLateCopies: the network keeps a copy of some datagrams and
// delivers it much later (up to 3 s: across reaping, cookie buckets,
// restarts and address changes); with mutate, it delivers corrupted copies
// at once instead.
func (ix *interplay) keepLateCopies() {
	rng, w, pick, mutate := ix.rng, ix.w, ix.pick, ix.mutate
	replay := pick(0, 0.01, 0.05)
	if mutate {
		replay = 0.05
	}
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
		ix.replays++
		w.at(w.now+Time(rng.IntN(3000))*Time(time.Millisecond), func() { w.net.Send(int64(w.now), from, to, d) })
	}
}

// partitionNowAndThen: in a third of the seeds, the network goes down for
// a while.
func (ix *interplay) partitionNowAndThen() {
	rng, w, tot, link := ix.rng, ix.w, ix.tot, ix.link
	if rng.IntN(3) == 0 {
		cut, cutFor := Time(rng.IntN(2000))*Time(time.Millisecond), Time(50+rng.IntN(1500))*Time(time.Millisecond)
		w.at(cut, func() {
			w.net.SetDefault(simnet.LinkConfig{Down: true})
			tot.partitions.Add(1)
			w.at(w.now+cutFor, func() { w.net.SetDefault(link) })
		})
	}
}

// forgeConnects sends forged connects now and then: half-open pressure.
func (ix *interplay) forgeConnects() {
	rng, w, srv, maxHalf := ix.rng, ix.w, ix.srv, ix.maxHalf
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
	_ = forged
}

// moveClientsBehindNAT: now and then a random client gets a new port, a
// new IP, or a port another client left; the old mapping may keep
// delivering a while.
func (ix *interplay) moveClientsBehindNAT() {
	rng, w, tot, srv, clients := ix.rng, ix.w, ix.tot, ix.srv, ix.clients
	owner, extOf, fresh := ix.owner, ix.extOf, ix.fresh
	var freed []netip.AddrPort
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
}
