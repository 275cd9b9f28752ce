//go:build linux

package xdp

import (
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// How long a peer's MAC is used before the neighbour table is read again,
// and how long a first datagram to a peer waits for the kernel to
// resolve it.
const (
	neighTTL     = 30 * time.Second
	resolveLimit = time.Second
)

// neighEntry is a peer's next-hop MAC and when to read it again.
type neighEntry struct {
	mac     [6]byte
	refresh time.Time
}

// resolve is the MAC to send a datagram to ip to. The kernel owns ARP and
// NDP: the MAC comes from its neighbour table for the route's next hop.
// When the table has none, a datagram to the next hop's discard port (9)
// from a kernel socket makes the kernel resolve it, and resolve waits up
// to resolveLimit for the answer: this blocks the event loop, once per new
// peer. Cached entries are read again after neighTTL; a stale one is kept
// while the table has nothing better.
func (t *Transport) resolve(ip netip.Addr) ([6]byte, bool) {
	e, ok := t.neigh[ip]
	if ok && time.Now().Before(e.refresh) {
		return e.mac, true
	}
	hop, err := t.nl.nextHop(t.ifindex, ip)
	if err != nil {
		return e.mac, ok
	}
	mac, found, _ := t.nl.neighbour(t.ifindex, hop)
	if !found {
		t.kernelResolve(hop)
		if ok { // keep the old MAC, and look again soon
			t.neigh[ip] = neighEntry{e.mac, time.Now().Add(resolveLimit)}
			return e.mac, true
		}
		for deadline, wait := time.Now().Add(resolveLimit), 100*time.Microsecond; !found && time.Now().Before(deadline); wait = min(2*wait, 50*time.Millisecond) {
			time.Sleep(wait)
			mac, found, _ = t.nl.neighbour(t.ifindex, hop)
		}
		if !found {
			return mac, false
		}
	}
	t.neigh[ip] = neighEntry{mac, time.Now().Add(neighTTL)}
	return mac, true
}

// kernelResolve sends an empty datagram to hop's discard port through the
// kernel, which resolves hop's MAC to send it.
func (t *Transport) kernelResolve(hop netip.Addr) {
	var sa unix.Sockaddr
	if hop.Is4() {
		sa = &unix.SockaddrInet4{Port: 9, Addr: hop.As4()}
	} else {
		sa = &unix.SockaddrInet6{Port: 9, Addr: hop.As16()}
	}
	unix.Sendto(t.probe, nil, 0, sa)
}
