package erpc

import (
	"net/netip"

	"github.com/erpc-go/erpc/transport"
)

// uncongested says which peers no network lies between: all of a
// same-host transport's (shared memory), and loopback addresses. Client
// sessions to them run on credits alone. Congestion control governs a
// network's queues; toward these peers the only queue is the receiver's
// CPU, which the credits already bound, and a delay-based window reads
// that queue as a network's and throttles the session (erpc-bench rate,
// 64 calls in flight over loopback: a quarter of the rate on credits).
func uncongested(tr transport.Transport) func(netip.AddrPort) bool {
	if sh, ok := tr.(transport.SameHoster); ok && sh.SameHost() {
		return func(netip.AddrPort) bool { return true }
	}
	return func(a netip.AddrPort) bool { return a.Addr().Unmap().IsLoopback() }
}

// reliable says which peers take the engine's lean path: all of a
// transport that delivers every datagram once and in order while the
// peer lives (transport.Reliable: shared memory, TCP), none otherwise. A
// transport that wraps another (fault injection) hides the interface, and
// its sessions keep their timers.
func reliable(tr transport.Transport) func(netip.AddrPort) bool {
	if r, ok := tr.(transport.Reliable); ok && r.Reliable() {
		return func(netip.AddrPort) bool { return true }
	}
	return nil
}
