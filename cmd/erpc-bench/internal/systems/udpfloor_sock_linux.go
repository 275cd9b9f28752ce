package systems

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	udpFloorMax  = 65507 // the largest UDP payload over IPv4
	udpFloorTag  = 4     // bytes of the slot tag at the start of a request
	udpFloorIdle = 50 * time.Millisecond
	udpFloorRTO  = time.Second
	udpFloorBuf  = 8 << 20 // SO_RCVBUF and SO_SNDBUF, as raw-udp asks for
)

var errFloorLost = errors.New("lost datagram: no response within 1 s (udp-floor does not retransmit)")

// udpFloorSocket opens a UDP socket bound to a free loopback port, with
// large buffers (what -c N in flight needs); its descriptor stays in
// blocking mode, the sends and receives say MSG_DONTWAIT.
func udpFloorSocket() (fd, port int, err error) {
	fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return -1, 0, err
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, udpFloorBuf) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, udpFloorBuf)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, udpFloorBuf) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, udpFloorBuf)
	}
	if err = unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err == nil {
		var sa unix.Sockaddr
		if sa, err = unix.Getsockname(fd); err == nil {
			return fd, sa.(*unix.SockaddrInet4).Port, nil
		}
	}
	unix.Close(fd)
	return -1, 0, err
}

// udpFloorConnect connects fd to the IPv4 address addr ("ip:port").
func udpFloorConnect(fd int, addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return err
	}
	if !ap.Addr().Is4() {
		return fmt.Errorf("udp-floor: %s is not an IPv4 address", addr)
	}
	return unix.Connect(fd, &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())})
}

// udpFloorAddr is a peer's address for udp-plain's sendto and recvfrom;
// nil on a connected socket, which names no address.
type udpFloorAddr struct {
	sa  unix.RawSockaddrInet4
	len uint32
}

// udpFloorRecv receives one datagram into b (which must not be empty)
// without waiting, and its source address into from unless from is nil.
func udpFloorRecv(fd int, b []byte, from *udpFloorAddr) (int, unix.Errno) {
	var sa, salen uintptr
	if from != nil {
		from.len = unix.SizeofSockaddrInet4
		sa, salen = uintptr(unsafe.Pointer(&from.sa)), uintptr(unsafe.Pointer(&from.len))
	}
	n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		unix.MSG_DONTWAIT, sa, salen)
	return int(n), e
}

// udpFloorSend sends the first n bytes of b (which must not be empty) to
// to, or on the connected socket if to is nil, spinning while its buffer
// is full.
func udpFloorSend(fd int, b []byte, n int, to *udpFloorAddr) unix.Errno {
	var sa, salen uintptr
	if to != nil {
		sa, salen = uintptr(unsafe.Pointer(&to.sa)), unix.SizeofSockaddrInet4
	}
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(n),
			unix.MSG_DONTWAIT, sa, salen)
		if e != unix.EAGAIN && e != unix.EINTR {
			return e
		}
	}
}

// udpFloorAddrOf is addr ("ip:port", IPv4) for udpFloorSend.
func udpFloorAddrOf(addr string) (*udpFloorAddr, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, err
	}
	if !ap.Addr().Is4() {
		return nil, fmt.Errorf("udp-plain: %s is not an IPv4 address", addr)
	}
	a := &udpFloorAddr{sa: unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ap.Addr().As4()}}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&a.sa.Port))[:], ap.Port())
	return a, nil
}
