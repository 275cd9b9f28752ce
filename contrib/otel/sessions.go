package otel

import (
	"net/netip"
	"sync"

	"github.com/erpc-go/erpc"
)

// sessionTracker counts an endpoint's open sessions per peer and side, so
// that a session that goes down is counted down only if it was counted
// up: a dial that never succeeded also ends with a down event, and
// erpc's SessionEvent has no session ID to match the two.
type sessionTracker struct {
	mu   sync.Mutex
	open map[netip.AddrPort]*[2]int // [client, server] sessions open with the peer
}

// update records ev and returns the side whose count changed (ev's own
// when none did) and the change: +1, -1, or 0 for a session that went
// down without having come up.
func (t *sessionTracker) update(ev erpc.SessionEvent) (server bool, delta int) {
	side := 0
	if ev.Server {
		side = 1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open == nil {
		t.open = map[netip.AddrPort]*[2]int{}
	}
	n := t.open[ev.Peer]
	if ev.Up {
		if n == nil {
			n = new([2]int)
			t.open[ev.Peer] = n
		}
		n[side]++
		return ev.Server, 1
	}
	if n == nil {
		return ev.Server, 0
	}
	if n[side] == 0 {
		// erpc may report the end of a client session it had already
		// forgotten (one it redialed) as a server's: count down the
		// side that is open.
		side = 1 - side
	}
	n[side]--
	if n[0] == 0 && n[1] == 0 {
		delete(t.open, ev.Peer)
	}
	return side == 1, -1
}
