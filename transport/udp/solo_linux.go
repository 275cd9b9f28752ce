//go:build linux && !erpc_portable

package udp

import (
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// solo connects a client-only transport's socket to its one peer
// (Options.ClientOnly). A connected UDP socket keeps its route: a send with
// no address and the receive of the peer's datagrams skip the route
// lookup that an unconnected socket does for each. States: not yet sent
// (peer invalid), connected to peer, and mixed (allowed false) once a
// second peer appears, for good: reconnecting would only trade one lookup
// for two system calls whenever the endpoint alternates.
type solo struct {
	allowed   bool
	connected bool
	peer      netip.AddrPort
}

// check runs before a batch is built: it connects the socket to the
// batch's peer on the first send, and disconnects it before anything goes
// to another peer, so that no datagram of the batch is built without an
// address while the socket points elsewhere.
func (s *solo) check(rc syscall.RawConn, msgs []transport.Message, v6 bool) {
	for i := range msgs {
		to := msgs[i].To
		switch {
		case s.connected && to == s.peer:
		case !s.peer.IsValid() && connectTo(rc, to, v6):
			s.peer, s.connected = to, true
		default:
			if s.connected {
				connectTo(rc, netip.AddrPort{}, v6) // AF_UNSPEC: back to unconnected
			}
			s.allowed, s.connected = false, false
			return
		}
	}
}

// connectTo connects the socket to to, or dissolves its association when
// to is the zero address. It reports whether the socket is now connected.
func connectTo(rc syscall.RawConn, to netip.AddrPort, v6 bool) bool {
	var sa unix.Sockaddr
	switch {
	case !to.IsValid():
		// connect(2) with AF_UNSPEC dissolves a UDP socket's association.
		var ok bool
		_ = rc.Control(func(fd uintptr) {
			sa := unix.RawSockaddrInet6{Family: unix.AF_UNSPEC}
			_, _, errno := unix.Syscall(unix.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&sa)), unix.SizeofSockaddrInet6)
			ok = errno == 0
		})
		return !ok
	case v6:
		sa = &unix.SockaddrInet6{Port: int(to.Port()), Addr: to.Addr().As16()}
	case to.Addr().Unmap().Is4():
		sa = &unix.SockaddrInet4{Port: int(to.Port()), Addr: to.Addr().Unmap().As4()}
	default:
		return false
	}
	var err error
	if cerr := rc.Control(func(fd uintptr) { err = unix.Connect(int(fd), sa) }); cerr != nil {
		return false
	}
	return err == nil
}
