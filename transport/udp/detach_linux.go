//go:build linux && !erpc_portable

package udp

import (
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A socket's registrations in epoll sets cost every datagram it moves: the
// kernel calls each set's callback, under a lock taken with interrupts
// off, for every datagram queued to the socket and every sent one freed.
// On the 2-CPU VM this was measured on, a plain recvmsg/sendmsg ping-pong
// took 0.8-1.0 us longer a round trip with the sockets in one epoll set,
// and 1.1-1.4 us longer in two nested sets, which is how a net.UDPConn
// in the Go netpoller plus a set of our own stood (against 10.4-10.7 us).
// So the transport's sockets are in no set while the loop runs: detach
// takes each out of the netpoller, and Wait puts them in the transport's
// own set only for as long as it parks (pathSet.arm).

// detach returns conn's socket as a file the Go netpoller does not watch,
// and closes conn. The socket is left in blocking mode, which keeps
// os.NewFile from registering it; every system call the transport makes on
// it says MSG_DONTWAIT, so nothing blocks.
func detach(conn *net.UDPConn) (*os.File, error) {
	defer conn.Close() // takes the original descriptor out of the netpoller
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl", derr)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fd), "erpc-udp"), nil
}

// writeWait is how long one poll(2) for room in a full send buffer lasts
// before the transport checks whether it was closed.
const writeWait = 10 * time.Millisecond

// waitWritable blocks until the socket has room to send or closed is set.
// A full send buffer is rare (a burst larger than SocketBuffer), so the
// thread simply blocks in poll(2), with no netpoller registration to pay
// for on every datagram.
func waitWritable(rc syscall.RawConn, closed func() bool) error {
	pfd := []unix.PollFd{{Events: unix.POLLOUT}}
	for !closed() {
		ready := false
		err := rc.Control(func(fd uintptr) {
			pfd[0].Fd = int32(fd)
			n, _ := unix.Poll(pfd, int(writeWait/time.Millisecond))
			ready = n > 0
		})
		if err != nil {
			return err
		}
		if ready {
			return nil
		}
	}
	return os.ErrClosed
}
