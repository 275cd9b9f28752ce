// Package udp is erpc-go's default transport: UDP datagrams through the
// kernel. On Linux it reads and writes in batches with recvmmsg and sendmmsg
// through the socket's RawConn (no allocation per datagram), a lone
// datagram with recvfrom and sendto (the cheapest calls), a busy-polling
// loop waits with back-to-back receives (Poll), and Wait parks in the Go
// netpoller; trains of equal-sized datagrams to one peer go out as one GSO
// send and come in through GRO, and Options.Paths opens several sockets
// (multipath). Elsewhere, or built with the erpc_portable tag, it uses the
// portable net.UDPConn path with a reader goroutine: one datagram per
// system call, no GSO or GRO, no Poll, and Listen fails with Paths above 1.
package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/erpc-go/erpc/transport"
)

// MaxDatagram is the largest UDP payload over IPv4.
const MaxDatagram = 65507

// DefaultSocketBuffer is the send and receive buffer asked of the kernel.
// Incast-heavy servers want about peers x window x MTU.
const DefaultSocketBuffer = 8 << 20

// Options tunes a UDP transport; the zero value is the default.
type Options struct {
	// SocketBuffer is the SO_RCVBUF and SO_SNDBUF size to ask for
	// (default DefaultSocketBuffer). As root, the limits in
	// net.core.rmem_max and wmem_max are bypassed.
	SocketBuffer int

	// PacketSize is the datagram size the endpoint should use for
	// multi-packet messages, header included. Default: the MTU of the
	// interface the socket is bound to, less the IP and UDP headers (65507
	// on loopback, 1472 on a 1500-byte Ethernet, 8972 with jumbo frames),
	// and 1472 when bound to all interfaces, where the path is not known.
	// Each session uses the smaller of its two ends' sizes, so a peer
	// across a smaller MTU is never sent fragments it did not ask for.
	PacketSize int

	// Paths is how many local ports the transport sends from (default 1):
	// the socket on addr is path 0, and Paths-1 more sockets on the same
	// address are the others, on PathPorts if given (one per extra path),
	// else on ports the kernel picks. A network that spreads flows over
	// several paths by hashing the UDP 5-tuple (ECMP) then carries one
	// session over several paths (transport.Pather).
	Paths     int
	PathPorts []int

	// ClientOnly says the transport belongs to an endpoint that only
	// makes calls (Linux). While everything it sends goes to one peer, its
	// socket is connected to that peer: the kernel then keeps the route in
	// the socket instead of looking it up for every datagram sent and
	// received (0.4-0.5 us a round trip in a loopback ping-pong with both
	// ends connected, one of them here), and drops datagrams
	// from any other sender, which a client-only endpoint refuses anyway.
	// The first datagram to a second peer disconnects the socket for good.
	// Ignored with more than one path, and on a dual-stack socket (an
	// IPv6 socket bound to all interfaces that also carries IPv4, which
	// is what Go opens for ":0", "0.0.0.0" and "[::]"): on Linux (6.x)
	// and gVisor such a socket connected to an IPv4 peer and disconnected
	// again hears no IPv6 peer. A client-only endpoint that wants the
	// speed-up and talks to one family binds a socket of that family
	// (Network).
	ClientOnly bool

	// Network is "udp" (the default: Go's choice, dual-stack when bound to
	// all interfaces), "udp4" (an IPv4 socket) or "udp6" (an IPv6 socket
	// that carries no IPv4).
	Network string
}

// defaultPacketSize is the datagram size for an unknown path: a 1500-byte
// Ethernet MTU less 20 bytes of IPv4 and 8 of UDP header.
const defaultPacketSize = 1472

// packetSizeFor is the largest datagram that leaves the interface holding
// addr unfragmented, or defaultPacketSize when addr is unspecified or on
// no interface.
func packetSizeFor(addr netip.Addr) int {
	if !addr.IsValid() || addr.IsUnspecified() {
		return defaultPacketSize
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return defaultPacketSize
	}
	overhead := 28 // IPv4 + UDP
	if !addr.Is4() && !addr.Is4In6() {
		overhead = 48 // IPv6 + UDP
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == addr.Unmap() {
				return min(max(ifc.MTU-overhead, defaultPacketSize), MaxDatagram)
			}
		}
	}
	return defaultPacketSize
}

var (
	_ transport.Transport   = (*Transport)(nil)
	_ transport.PacketSizer = (*Transport)(nil)
)

// ErrNotSupported is matched, with errors.Is, by the error of a Listen that
// asks for what this build's transport cannot do (several paths from the
// portable one): a permanent error, not worth trying again.
var ErrNotSupported = errors.New("udp: not supported by this build's transport")

// Listen opens a UDP transport on addr ("host:port"; port 0 picks one).
func Listen(addr string, opts Options) (*Transport, error) {
	switch opts.Network {
	case "":
		opts.Network = "udp"
	case "udp", "udp4", "udp6":
	default:
		return nil, fmt.Errorf("udp: network %q (want udp, udp4 or udp6)", opts.Network)
	}
	ua, err := net.ResolveUDPAddr(opts.Network, addr)
	if err != nil {
		return nil, err
	}
	conn, err := listenUDP(opts.Network, ua, opts.ClientOnly)
	if err != nil {
		return nil, err
	}
	if opts.SocketBuffer <= 0 {
		opts.SocketBuffer = DefaultSocketBuffer
	}
	setBuffers(conn, opts.SocketBuffer)
	local, err := netip.ParseAddrPort(conn.LocalAddr().String())
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("udp: local address: %w", err)
	}
	bound := local.Addr()
	if local.Addr().IsUnspecified() { // peers on this host reach us on loopback
		lo := netip.IPv6Loopback()
		if opts.Network != "udp6" && (local.Addr().Is4() || ua.IP == nil || ua.IP.To4() != nil) {
			lo = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
		local = netip.AddrPortFrom(lo, local.Port())
	}
	if opts.PacketSize <= 0 {
		opts.PacketSize = packetSizeFor(ua.AddrPort().Addr())
	}
	t := &Transport{conn: conn, local: local, bound: bound, network: opts.Network, packetSize: min(opts.PacketSize, MaxDatagram)}
	if err := t.init(opts); err != nil {
		t.Close()
		return nil, err
	}
	if err := t.openPaths(ua, opts); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// listenUDP opens the socket on ua. A client-only socket that asked for
// any port is bound to an explicit one, which the kernel then keeps when
// the socket is disconnected from its peer (a port it picked at bind time
// is given up by connect(AF_UNSPEC)): the port comes from a first socket
// that asked for any, closed just before; if another socket takes it in
// between, it tries again.
func listenUDP(network string, ua *net.UDPAddr, clientOnly bool) (*net.UDPConn, error) {
	if !clientOnly || ua.Port != 0 {
		return net.ListenUDP(network, ua)
	}
	var err error
	for range 8 {
		var probe *net.UDPConn
		if probe, err = net.ListenUDP(network, ua); err != nil {
			return nil, err
		}
		fixed := *ua
		fixed.Port = probe.LocalAddr().(*net.UDPAddr).Port
		probe.Close()
		var conn *net.UDPConn
		if conn, err = net.ListenUDP(network, &fixed); err == nil {
			return conn, nil
		}
	}
	return nil, err
}

// openPaths opens the sockets of paths 1 and up.
func (t *Transport) openPaths(ua *net.UDPAddr, opts Options) error {
	for p := 1; p < min(opts.Paths, 64); p++ {
		pa := *ua
		pa.Port = 0
		if p-1 < len(opts.PathPorts) {
			pa.Port = opts.PathPorts[p-1]
		}
		c, err := net.ListenUDP(opts.Network, &pa)
		if err != nil {
			return fmt.Errorf("udp: path %d: %w", p, err)
		}
		setBuffers(c, opts.SocketBuffer)
		if err := t.addPath(c); err != nil {
			c.Close()
			return err
		}
	}
	return nil
}

// Paths is how many local ports the transport sends from.
func (t *Transport) Paths() int { return 1 + len(t.paths) }

// PathPort is the local port of path p.
func (t *Transport) PathPort(p int) int {
	if p == 0 {
		return int(t.local.Port())
	}
	return t.paths[p-1].port
}

// LocalAddr is the address peers send to (loopback when bound to all
// interfaces).
func (t *Transport) LocalAddr() netip.AddrPort { return t.local }

// Target is what a peer dials to reach the transport ("udp://host:port").
func (t *Transport) Target() string { return "udp://" + t.local.String() }

// MaxDatagram is the largest datagram the transport carries.
func (t *Transport) MaxDatagram() int { return MaxDatagram }

// PacketSize is the datagram size the endpoint uses (Options.PacketSize).
func (t *Transport) PacketSize() int { return t.packetSize }

// Resolve turns "host:port" into an address, in the form Receive reports
// peers in: an IPv4 address is plain IPv4, never IPv4-mapped IPv6
// ("[::ffff:127.0.0.1]:1" resolves to "127.0.0.1:1"), so that what was
// resolved equals what the peer's datagrams come from. A name resolves to
// its first address (erpc.Dial tries them all).
func (t *Transport) Resolve(addr string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddrPort(addr); err == nil {
		return canonical(a), nil
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return canonical(ua.AddrPort()), nil
}

// Reaches reports whether the socket can send to a: one bound to an IPv4
// address reaches only IPv4 peers, one bound to a particular IPv6 address
// only IPv6 peers, one of one family (Options.Network) only that family's,
// and one bound to all interfaces, which Go opens dual-stack where the
// system has IPv6, both (it sends to an IPv4 peer at its IPv4-mapped
// address).
func (t *Transport) Reaches(a netip.Addr) bool {
	v4 := a.Unmap().Is4()
	switch b := t.bound.Unmap(); {
	case t.network == "udp4":
		return v4
	case t.network == "udp6":
		return !v4
	case b.Is4():
		return v4
	case b.IsUnspecified():
		return true
	default:
		return !v4
	}
}

// canonical maps an IPv4-mapped address (as read from a dual-stack
// socket, or written by a user) back to IPv4: the one form the engine
// sees, whatever the socket's family.
func canonical(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}
