package erpc_test

import (
	"net/netip"
	"sync"

	"github.com/erpc-go/erpc/transport"
)

// nat stands between a server and its clients as a NAT gateway does: the
// server sees each client under an outside address that the gateway may
// change at any moment (rebinding), and answers sent to an address the
// gateway no longer maps are lost. Its mappings outlive the server's
// transports, so a restarted server sees the clients behind the same
// gateway.
type nat struct {
	mu      sync.Mutex
	outside map[netip.AddrPort]netip.AddrPort // client's own address -> what the server sees
	inside  map[netip.AddrPort]netip.AddrPort // the reverse, current mappings only
	next    uint32
	rebinds int // mappings changed
	stale   int // answers dropped: sent to a mapping that was changed
}

func newNAT() *nat {
	return &nat{outside: map[netip.AddrPort]netip.AddrPort{}, inside: map[netip.AddrPort]netip.AddrPort{}}
}

// fresh returns an outside address never used before: a new IP, or with
// newIP false the same IP as old on a new port.
func (n *nat) fresh(old netip.AddrPort, newIP bool) netip.AddrPort {
	n.next++
	if !newIP && old.IsValid() {
		return netip.AddrPortFrom(old.Addr(), uint16(20000+n.next%40000))
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 201, byte(n.next >> 8), byte(n.next)}), 7000)
}

// mapIn returns the outside address of a client's datagram, mapping it on
// first sight.
func (n *nat) mapIn(from netip.AddrPort) netip.AddrPort {
	n.mu.Lock()
	defer n.mu.Unlock()
	out, ok := n.outside[from]
	if !ok {
		out = n.fresh(netip.AddrPort{}, true)
		n.outside[from], n.inside[out] = out, from
	}
	return out
}

// mapOut returns the client an answer to outside address to reaches.
func (n *nat) mapOut(to netip.AddrPort) (netip.AddrPort, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	in, ok := n.inside[to]
	if !ok {
		n.stale++
	}
	return in, ok
}

// rebindAll gives every client a new outside address: a new IP, or with
// newIP false a new port.
func (n *nat) rebindAll(newIP bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for in, out := range n.outside {
		delete(n.inside, out)
		out = n.fresh(out, newIP)
		n.outside[in], n.inside[out] = out, in
		n.rebinds++
	}
}

func (n *nat) counts() (rebinds, stale int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rebinds, n.stale
}

// natTransport is a server's transport seen through the gateway.
type natTransport struct {
	transport.Transport
	nat     *nat
	scratch []transport.Message
}

func (t *natTransport) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	return t.Transport.Receive(func(from netip.AddrPort, data []byte) { fn(t.nat.mapIn(from), data) })
}

func (t *natTransport) Send(msgs []transport.Message) error {
	t.scratch = t.scratch[:0]
	for _, m := range msgs {
		if in, ok := t.nat.mapOut(m.To); ok {
			m.To = in
			t.scratch = append(t.scratch, m)
		}
	}
	return t.Transport.Send(t.scratch)
}
