//go:build linux

package xdp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelCheckEvery is how many Receive calls may pass between two reads
// of the kernel socket while Wait does not report it readable (a busy
// loop never waits): one non-blocking receive, about a microsecond.
const kernelCheckEvery = 256

// openKernelSocket binds a kernel UDP socket to local. It holds the port
// (and picks one for port 0), and it receives what the XDP program passes
// to the kernel for that port: fragmented datagrams, IPv4 with options,
// tagged frames, datagrams on a queue without a socket. Those arrive
// through Receive too, on this slower path.
func openKernelSocket(local netip.AddrPort) (int, netip.AddrPort, error) {
	family := unix.AF_INET6
	var sa unix.Sockaddr = &unix.SockaddrInet6{Port: int(local.Port()), Addr: local.Addr().As16()}
	if local.Addr().Is4() {
		family = unix.AF_INET
		sa = &unix.SockaddrInet4{Port: int(local.Port()), Addr: local.Addr().As4()}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return -1, local, fmt.Errorf("xdp: kernel UDP socket: %w", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, local, fmt.Errorf("xdp: binding %v: %w", local, err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, local, fmt.Errorf("xdp: getsockname: %w", err)
	}
	switch a := got.(type) {
	case *unix.SockaddrInet4:
		local = netip.AddrPortFrom(local.Addr(), uint16(a.Port))
	case *unix.SockaddrInet6:
		local = netip.AddrPortFrom(local.Addr(), uint16(a.Port))
	}
	return fd, local, nil
}

// receiveKernel passes what the kernel socket holds to fn. It calls
// recvfrom itself, into a sockaddr kept in the transport: unix.Recvfrom
// allocates one per call, found or not.
func (t *Transport) receiveKernel(fn func(netip.AddrPort, []byte)) int {
	t.kernelReady = false
	n := 0
	for range 64 {
		size := uint32(unix.SizeofSockaddrAny)
		m, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(t.kernel), uintptr(unsafe.Pointer(&t.kernelBuf[0])),
			uintptr(len(t.kernelBuf)), unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&t.kernelFrom)), uintptr(unsafe.Pointer(&size)))
		if e != 0 {
			break
		}
		from, ok := sockaddrPort(&t.kernelFrom)
		if !ok {
			continue
		}
		fn(from, t.kernelBuf[:m])
		n++
	}
	return n
}

// sockaddrPort is the address in a raw sockaddr of either family.
func sockaddrPort(rsa *unix.RawSockaddrAny) (netip.AddrPort, bool) {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), binary.BigEndian.Uint16(p[:])), true
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), binary.BigEndian.Uint16(p[:])), true
	}
	return netip.AddrPort{}, false
}
