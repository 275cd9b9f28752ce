// Package udp is erpc-go's default transport: UDP datagrams through the
// kernel. On Linux it reads and writes in batches with recvmmsg and sendmmsg
// through the socket's RawConn (no allocation per datagram), and its Wait
// parks in the Go netpoller; elsewhere, or built with the erpc_portable tag,
// it uses the portable net.UDPConn path with a reader goroutine.
package udp

import (
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
}

var _ transport.Transport = (*Transport)(nil)

// Listen opens a UDP transport on addr ("host:port"; port 0 picks one).
func Listen(addr string, opts Options) (*Transport, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp", ua)
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
	if local.Addr().IsUnspecified() { // peers on this host reach us on loopback
		lo := netip.IPv6Loopback()
		if local.Addr().Is4() || ua.IP == nil || ua.IP.To4() != nil {
			lo = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
		local = netip.AddrPortFrom(lo, local.Port())
	}
	t := &Transport{conn: conn, local: local}
	if err := t.init(); err != nil {
		conn.Close()
		return nil, err
	}
	return t, nil
}

// LocalAddr is the address peers send to (loopback when bound to all
// interfaces).
func (t *Transport) LocalAddr() netip.AddrPort { return t.local }

// MaxDatagram is the largest datagram the transport carries.
func (t *Transport) MaxDatagram() int { return MaxDatagram }

// Resolve turns "host:port" into an address.
func (t *Transport) Resolve(addr string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddrPort(addr); err == nil {
		return a, nil
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return ua.AddrPort(), nil
}

// canonical maps an address read from a dual-stack socket back to IPv4.
func canonical(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}
