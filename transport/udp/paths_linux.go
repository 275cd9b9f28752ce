//go:build linux && !erpc_portable

package udp

import (
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// pathConn is the socket of one extra path.
type pathConn struct {
	conn *net.UDPConn
	rc   syscall.RawConn
	port int
}

// pathSet is how a transport waits: every socket, the main one included,
// is in an epoll set of its own (level-triggered), and the loop parks in
// the Go netpoller on that set's descriptor, which is readable while any
// socket is. One park, whatever the number of paths.
type pathSet struct {
	ep  *os.File
	rc  syscall.RawConn
	evs [1]unix.EpollEvent
}

// addPath adds c as the next path's socket.
func (t *Transport) addPath(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	if err := t.set.add(rc); err != nil {
		return err
	}
	if t.groOn {
		setGRO(rc)
	}
	t.paths = append(t.paths, &pathConn{conn: c, rc: rc, port: c.LocalAddr().(*net.UDPAddr).Port})
	return nil
}

func newPathSet(main syscall.RawConn) (*pathSet, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil { // so the netpoller takes it
		unix.Close(fd)
		return nil, err
	}
	s := &pathSet{ep: os.NewFile(uintptr(fd), "erpc-udp-paths")}
	if s.rc, err = s.ep.SyscallConn(); err != nil {
		s.ep.Close()
		return nil, err
	}
	if err := s.add(main); err != nil {
		s.ep.Close()
		return nil, err
	}
	return s, nil
}

// add puts a socket in the set.
func (s *pathSet) add(sock syscall.RawConn) error {
	var err error
	cerr := s.rc.Control(func(epfd uintptr) {
		err = sock.Control(func(fd uintptr) {
			ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
			err = unix.EpollCtl(int(epfd), unix.EPOLL_CTL_ADD, int(fd), &ev)
		})
	})
	if cerr != nil {
		return cerr
	}
	return err
}

// ready reports whether a socket of the set has something to read.
func (s *pathSet) ready(epfd uintptr) bool {
	n, _ := unix.EpollWait(int(epfd), s.evs[:], 0)
	return n > 0
}
