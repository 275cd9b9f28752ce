//go:build linux

package tcp

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// shareListenPort lets the transport's dialed sockets bind the listening
// socket's port (SO_REUSEPORT, set after the bind: a second transport
// that tries to listen on the same port still finds it taken, since its
// own bind does not ask to share). Linux lets sockets of one user share a
// port this way; the kernel still refuses two sockets one 4-tuple.
func shareListenPort(ln *net.TCPListener) error {
	rc, err := ln.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}

// reuseControl lets a dialed socket bind the listening port.
func reuseControl(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}
	}); err != nil {
		return err
	}
	return serr
}
