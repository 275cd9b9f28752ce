//go:build linux

package shm

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Bells (see the package comment): making a transport's bell and the
// sockets connected to it that peers get, checking the one a peer passes,
// and ringing a peer's.

// ringPeer wakes the peer if it sleeps: once per sleep, which the peer
// numbers (its Wait's epoch in its word), so a busy stream costs one
// atomic load per record and no write to the peer's memory.
func (c *conn) ringPeer() {
	if w := c.peerSleeping.Load(); w != 0 && w != c.rung {
		c.rung = w
		ring(c.peerBell)
	}
}

var bellByte = []byte{1}

// bellWrites counts ring's system calls, process-wide (a test's: a peer
// that polls must be reached with none).
var bellWrites atomic.Uint64

// ring sends one byte on a bell socket. MSG_DONTWAIT makes this call
// non-blocking whatever the socket's file flags (which the peer that passed
// it shares): a full queue (EAGAIN) has a wake-up pending anyway, and any
// other error means nobody to wake.
func ring(bell int) {
	bellWrites.Add(1)
	unix.Sendto(bell, bellByte, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil)
}

// newBellReceiver makes a transport's bell: a non-blocking unix datagram
// socket bound to an abstract address that the kernel picks. It returns
// the socket and its name ("@" and the name).
func newBellReceiver() (int, string, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("shm: bell socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{}); err != nil { // autobind
		unix.Close(fd)
		return -1, "", fmt.Errorf("shm: bell bind: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	addr, ok := sa.(*unix.SockaddrUnix)
	if err != nil || !ok || len(addr.Name) < 2 || addr.Name[0] != '@' {
		unix.Close(fd)
		return -1, "", fmt.Errorf("shm: bell address: %v", err)
	}
	return fd, addr.Name, nil
}

// newBellSender makes a fresh socket connected to our bell, to pass to a
// peer (or to ring ourselves).
func (t *Transport) newBellSender() (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("shm: bell socket: %w", err)
	}
	// A SockaddrUnix of its own: encoding one writes into it.
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: t.bellName}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("shm: bell connect: %w", err)
	}
	return fd, nil
}

// mmsghdr is struct mmsghdr of recvmmsg(2): a msghdr and the length
// received (Go pads it like C).
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
}

var errBell = errors.New("shm: the peer's bell is not a unix datagram socket")

// checkBell checks that a descriptor from a peer is a unix datagram
// socket, which ring can never block on.
func checkBell(fd int) error {
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil || typ != unix.SOCK_DGRAM {
		return errBell
	}
	dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil || dom != unix.AF_UNIX {
		return errBell
	}
	return nil
}
