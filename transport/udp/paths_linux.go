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
	sock *os.File // outside the Go netpoller (detach)
	rc   syscall.RawConn
	port int
}

// pathSet is how a transport waits: while Wait parks, every socket, the
// main one included, is in an epoll set of its own (level-triggered), and
// the loop parks in the Go netpoller on that set's descriptor, which is
// readable while any socket is. One park, whatever the number of paths.
// The sockets are in the set only while the loop parks (arm, disarm): a
// registration costs every datagram the socket moves (see detach).
type pathSet struct {
	ep    *os.File
	rc    syscall.RawConn
	evs   [1]unix.EpollEvent
	socks []syscall.RawConn
	armed int // socks[:armed] are in the set

	// State of one arm or disarm, and its callbacks, bound once so that
	// parking allocates nothing.
	epfd     int
	op       int
	err      error
	ctlAllFn func(epfd uintptr)
	ctlOneFn func(fd uintptr)
}

// addPath adds c as the next path's socket.
func (t *Transport) addPath(c *net.UDPConn) error {
	port := c.LocalAddr().(*net.UDPAddr).Port
	sock, err := detach(c)
	if err != nil {
		return err
	}
	rc, err := sock.SyscallConn()
	if err != nil {
		sock.Close()
		return err
	}
	t.set.add(rc)
	if t.groOn {
		setGRO(rc)
	}
	t.paths = append(t.paths, &pathConn{sock: sock, rc: rc, port: port})
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
	s.ctlAllFn, s.ctlOneFn = s.ctlAll, s.ctlOne
	s.add(main)
	return s, nil
}

// add makes sock one of the sockets arm puts in the set.
func (s *pathSet) add(sock syscall.RawConn) { s.socks = append(s.socks, sock) }

// arm puts every socket in the set. A socket with a datagram already
// waiting makes the set readable at once (level-triggered), so a datagram
// that arrived after the loop last looked is not slept through. On a
// failure it leaves the set as it was.
func (s *pathSet) arm() error {
	s.op, s.err = unix.EPOLL_CTL_ADD, nil
	if err := s.rc.Control(s.ctlAllFn); err != nil {
		return err
	}
	if s.err != nil {
		s.disarm()
	}
	return s.err
}

// disarm takes the sockets out of the set again.
func (s *pathSet) disarm() {
	s.op = unix.EPOLL_CTL_DEL
	_ = s.rc.Control(s.ctlAllFn)
}

// ctlAll adds the sockets not in the set (EPOLL_CTL_ADD), stopping at the
// first failure, or removes those in it.
func (s *pathSet) ctlAll(epfd uintptr) {
	s.epfd = int(epfd)
	if s.op == unix.EPOLL_CTL_DEL {
		for ; s.armed > 0; s.armed-- {
			_ = s.socks[s.armed-1].Control(s.ctlOneFn) // a closed socket left the set
		}
		return
	}
	for ; s.armed < len(s.socks); s.armed++ {
		if err := s.socks[s.armed].Control(s.ctlOneFn); err != nil {
			s.err = err
		}
		if s.err != nil {
			return
		}
	}
}

func (s *pathSet) ctlOne(fd uintptr) {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(s.epfd, s.op, int(fd), &ev); err != nil && s.op == unix.EPOLL_CTL_ADD {
		s.err = err
	}
}

// ready reports whether a socket of the set has something to read.
func (s *pathSet) ready(epfd uintptr) bool {
	n, _ := unix.EpollWait(int(epfd), s.evs[:], 0)
	return n > 0
}
