//go:build linux

package xdp

import (
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The loop's cache of peers' MACs and its bounds.
const (
	// neighTTL is how long the loop uses a MAC before it asks the
	// resolver again (it keeps using it meanwhile).
	neighTTL = 30 * time.Second
	// neighLimit bounds the peers the cache holds: a flood of spoofed
	// sources must not grow it without end. A datagram to a new peer
	// beyond it is dropped.
	neighLimit = 4096
	// failBackoff is how long a peer the kernel could not resolve is
	// dropped for before it is tried again, doubling up to failBackoffMax.
	failBackoff    = time.Second
	failBackoffMax = 30 * time.Second
)

// neighEntry is what the loop knows of a peer's next-hop MAC.
type neighEntry struct {
	mac     [6]byte
	ok      bool          // mac is usable
	direct  bool          // the peer is on the link: its frames tell its MAC
	asking  bool          // an ask is with the resolver
	refresh time.Time     // when to ask again
	backoff time.Duration // after failures: the wait before the next try
}

// lookup is the MAC to send a datagram to ip to, if the loop has one. It
// asks the resolver (without waiting) for a new peer and for one whose
// entry is due for a refresh or a retry; it never blocks.
func (t *Transport) lookup(ip netip.Addr, now time.Time) (mac [6]byte, ok bool) {
	cur, found := t.neigh[ip]
	if !found && len(t.neigh) >= neighLimit {
		return mac, false
	}
	if !cur.asking && !now.Before(cur.refresh) {
		select {
		case t.res.asks <- ip:
			cur.asking = true
			t.neigh[ip] = cur
		default: // the resolver is busy: ask again on a later Send
			if !found {
				t.neigh[ip] = cur
			}
		}
	}
	return cur.mac, cur.ok
}

// sendKernel sends a datagram to a peer whose MAC is being resolved
// through the kernel socket, from the same address: the kernel queues it
// while it resolves the MAC (its ARP and NDP queues, bounded) and drops
// it if it cannot, as for any UDP socket. The loop never waits. It
// reports whether the kernel took it.
func (t *Transport) sendKernel(to netip.AddrPort, head, payload []byte) bool {
	if !t.neigh[to.Addr()].asking {
		return false // failed lately: dropped until the backoff ends
	}
	n := copy(t.kernelOut, head)
	n += copy(t.kernelOut[n:], payload)
	p, l := t.kernelTo.set(to)
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(t.kernel), uintptr(unsafe.Pointer(&t.kernelOut[0])), uintptr(n),
		unix.MSG_DONTWAIT, uintptr(p), l)
	return e == 0
}

// takeAnswers applies what the resolver has answered: a MAC to use until
// the next refresh, or a failure,
// after which the peer's datagrams are dropped for a backoff that doubles
// while failures repeat. A peer that had a MAC keeps it on a failure, as
// the best guess there is.
func (t *Transport) takeAnswers() {
	for len(t.res.answers) > 0 {
		a := <-t.res.answers
		e, found := t.neigh[a.ip]
		if !found {
			continue
		}
		now := time.Now()
		e.asking = false
		if a.ok {
			e.mac, e.ok, e.direct = a.mac, true, a.direct
			e.refresh, e.backoff = now.Add(neighTTL), 0
		} else {
			e.backoff = min(max(2*e.backoff, failBackoff), failBackoffMax)
			e.refresh = now.Add(e.backoff)
		}
		t.neigh[a.ip] = e
		t.lastFrom = netip.Addr{} // learn again what frames say
	}
}

// learn takes the source MAC of a valid frame from a peer on the link as
// its MAC: a peer whose MAC changed is reached again as soon as it sends.
// One peer's (IP, MAC) is remembered, so that a steady exchange with it
// looks nothing up.
func (t *Transport) learn(from netip.Addr, frame []byte) {
	src := [6]byte(frame[6:12])
	if from == t.lastFrom && src == t.lastMAC {
		return
	}
	t.lastFrom, t.lastMAC = from, src
	if e, ok := t.neigh[from]; ok && e.ok && e.direct && e.mac != src {
		e.mac = src
		t.neigh[from] = e
	}
}

// count adds to the sent and dropped counters.
func (t *Transport) count(sent, dropped int) {
	if sent > 0 {
		t.stats.sent.Add(uint64(sent))
	}
	if dropped > 0 {
		t.stats.dropped.Add(uint64(dropped))
	}
}

// rawAddr is a sockaddr of either family, built without allocating.
type rawAddr struct {
	sa4 unix.RawSockaddrInet4
	sa6 unix.RawSockaddrInet6
}

// set makes the sockaddr of to and returns its pointer and length.
func (r *rawAddr) set(to netip.AddrPort) (unsafe.Pointer, uintptr) {
	port := [2]byte{byte(to.Port() >> 8), byte(to.Port())}
	if to.Addr().Is4() {
		r.sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: to.Addr().As4()}
		r.sa4.Port = *(*uint16)(unsafe.Pointer(&port[0]))
		return unsafe.Pointer(&r.sa4), unsafe.Sizeof(r.sa4)
	}
	r.sa6 = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: to.Addr().As16()}
	r.sa6.Port = *(*uint16)(unsafe.Pointer(&port[0]))
	return unsafe.Pointer(&r.sa6), unsafe.Sizeof(r.sa6)
}
