package systems

import (
	"errors"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport/udp"
)

// udpSock is a UDP socket driven the way erpc's Linux UDP transport drives
// its own, so that raw-udp is a floor for erpc and not a different kind of
// I/O: recvmsg while the socket was last found empty and recvmmsg batches
// after it had datagrams (with UDP_GRO once trains arrive), sendmmsg
// batches in which runs of equal-sized datagrams go as one UDP_SEGMENT
// (GSO) train, raw non-blocking system
// calls on a descriptor in no epoll set. It waits as erpc does, except
// for where it parks: in the default mode an empty socket is polled for
// 50 µs, yielding, erpc's shortest spin window (a ping-pong never waits
// that long); with busy set the caller spins on the socket from a
// goroutine locked to its thread; only after that (busy: idle of quiet)
// does it park, in poll(2), where erpc parks in the Go netpoller. The
// batches are allocated once, so nothing allocates per datagram.
type udpSock struct {
	file   *os.File // the socket, outside the Go netpoller (see newUDPSock)
	local  net.Addr
	closed atomic.Bool
	fd     uintptr
	busy   bool
	idle   time.Duration // busy: spin this long without traffic, then park
	pfd    [1]unix.PollFd

	// Receive batch.
	rxHdrs  []unix.Mmsghdr
	rxIovs  []unix.Iovec
	rxNames []unix.RawSockaddrInet6
	rxCtrl  []byte
	rxBufs  []byte
	rxN     int
	rxErr   syscall.Errno
	// rxBatched: the last receive found datagrams (see recvOnce).
	rxBatched bool

	gro bool // UDP_GRO is on: see noteTrain

	// Send batch: entries of one datagram or one GSO train each.
	gso     bool
	txHdrs  []unix.Mmsghdr
	txCtrl  []byte
	txIovs  []unix.Iovec // two per datagram (header, payload); never reallocated
	txHeads []byte       // the headers the iovecs point into
	txSegs  []int        // datagrams per entry
	txSize  []int        // bytes of the entry's first datagram
	txTotal []int        // bytes of the entry
	txEnd   int          // entries built
	txDone  int          // entries sent
	txErr   syscall.Errno

	to    unix.RawSockaddrInet6
	tolen uint32 // 0: the socket is connected

}

const (
	sockBatch   = 32      // mmsghdrs per recvmmsg or sendmmsg, as erpc
	sockRecvBuf = 1 << 16 // one maximal datagram or GRO train
	sockMaxSegs = 64      // datagrams per GSO train, as erpc
	sockHeadMax = 32      // header bytes per datagram at most
	sockBuffer  = 8 << 20 // SO_RCVBUF and SO_SNDBUF, as erpc
)

var (
	sockRxCtrl = unix.CmsgSpace(4)
	sockTxCtrl = unix.CmsgSpace(2)
)

var errTimeout = errors.New("timed out")

// defaultSpin is the shortest of erpc's default spin windows.
const defaultSpin = 50 * time.Microsecond

// erpcPacketSize is the datagram size erpc's UDP transport uses on the
// loopback interface, learnt by opening one.
func erpcPacketSize() int {
	t, err := udp.Listen("127.0.0.1:0", udp.Options{})
	if err != nil {
		return 1472
	}
	defer t.Close()
	return t.PacketSize()
}

// newUDPSock takes conn's socket out of the Go netpoller, as erpc's
// transport does (a registration in an epoll set costs every datagram),
// and closes conn: the socket lives on as a blocking-mode descriptor that
// every system call here passes MSG_DONTWAIT, and waits in poll(2).
func newUDPSock(conn *net.UDPConn, busy bool, idle time.Duration) (*udpSock, error) {
	s := &udpSock{local: conn.LocalAddr(), busy: busy, idle: idle}
	var err error
	if s.file, err = detachUDP(conn); err != nil {
		return nil, err
	}
	rc, err := s.file.SyscallConn()
	if err != nil {
		s.file.Close()
		return nil, err
	}
	rc.Control(func(fd uintptr) {
		s.fd = fd
		// Large buffers, as erpc asks for: FORCE passes rmem_max as root.
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, sockBuffer) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, sockBuffer)
		}
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, sockBuffer) != nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, sockBuffer)
		}
		s.gso = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT, 0) == nil
	})
	s.pfd[0].Fd = int32(s.fd)
	s.rxHdrs = make([]unix.Mmsghdr, sockBatch)
	s.rxIovs = make([]unix.Iovec, sockBatch)
	s.rxNames = make([]unix.RawSockaddrInet6, sockBatch)
	s.rxCtrl = make([]byte, sockBatch*sockRxCtrl)
	s.rxBufs = make([]byte, sockBatch*sockRecvBuf)
	for i := range s.rxHdrs {
		s.rxIovs[i].Base = &s.rxBufs[i*sockRecvBuf]
		s.rxIovs[i].SetLen(sockRecvBuf)
		h := &s.rxHdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&s.rxNames[i]))
		h.Iov = &s.rxIovs[i]
		h.SetIovlen(1)
		h.Control = &s.rxCtrl[i*sockRxCtrl]
	}
	s.txHdrs = make([]unix.Mmsghdr, sockBatch)
	s.txCtrl = make([]byte, sockBatch*sockTxCtrl)
	s.txIovs = make([]unix.Iovec, 0, 2*sockBatch*sockMaxSegs)
	s.txHeads = make([]byte, sockBatch*sockMaxSegs*sockHeadMax)
	s.txSegs = make([]int, sockBatch)
	s.txSize = make([]int, sockBatch)
	s.txTotal = make([]int, sockBatch)
	return s, nil
}

func (s *udpSock) recvOnce(fd uintptr) {
	use := len(s.rxHdrs)
	if !s.rxBatched {
		use = 1 // the one recvmsg fills
	}
	for i := range s.rxHdrs[:use] {
		h := &s.rxHdrs[i].Hdr
		h.Namelen = unix.SizeofSockaddrInet6
		h.SetControllen(sockRxCtrl)
		h.Flags = 0
		s.rxHdrs[i].Len = 0
	}
	// As erpc's transport: one datagram (recvmsg) while the socket was
	// last found empty, a batch (recvmmsg) after it had some.
	var n uintptr
	var e syscall.Errno
	if !s.rxBatched {
		n, _, e = unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&s.rxHdrs[0].Hdr)), unix.MSG_DONTWAIT)
		if e == 0 {
			s.rxHdrs[0].Len = uint32(n)
			n = 1
		}
	} else {
		n, _, e = unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&s.rxHdrs[0])), sockBatch,
			unix.MSG_DONTWAIT, 0, 0)
	}
	s.rxN, s.rxErr = int(n), e
	if e != 0 {
		s.rxN = 0
	}
	s.rxBatched = s.rxN > 0
	if !s.gro && s.rxN >= 4 {
		s.noteTrain(fd)
	}
}

// noteTrain switches UDP_GRO on, as erpc's transport does, once a batch
// holds four datagrams: GRO helps bursts and costs single datagrams a
// little.
func (s *udpSock) noteTrain(fd uintptr) {
	s.gro = true
	_ = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1)
}

// recv reads one batch and returns the number of messages in it (see
// message). A non-zero deadline bounds the wait (errTimeout).
func (s *udpSock) recv(deadline time.Time) (int, error) {
	for {
		if s.busy {
			spins := 0
			var start time.Time
			for {
				s.recvOnce(s.fd)
				if s.rxErr != unix.EAGAIN && s.rxErr != unix.EINTR {
					break
				}
				if spins++; spins&255 != 0 {
					continue
				}
				now := time.Now()
				if !deadline.IsZero() && now.After(deadline) {
					return 0, errTimeout
				}
				if start.IsZero() {
					start = now
				} else if s.idle > 0 && now.Sub(start) > s.idle {
					// poll(2) blocks the locked thread; the runtime
					// hands its P to another.
					if err := s.recvBlocking(deadline); err != nil {
						return 0, err
					}
					break
				}
			}
		} else {
			var start time.Time
			for {
				s.recvOnce(s.fd)
				if s.rxErr != unix.EAGAIN && s.rxErr != unix.EINTR {
					break
				}
				now := time.Now()
				if start.IsZero() {
					start = now
				} else if now.Sub(start) > defaultSpin {
					if err := s.recvBlocking(deadline); err != nil {
						return 0, err
					}
					break
				}
				runtime.Gosched()
			}
		}
		switch s.rxErr {
		case 0:
			return s.rxN, nil
		case unix.EAGAIN, unix.EINTR, unix.ECONNREFUSED:
			// ECONNREFUSED: an ICMP error from an earlier send; retry.
			continue
		}
		return 0, s.rxErr
	}
}

// sockPark bounds one poll(2), so that a parked socket notices close.
const sockPark = 50 * time.Millisecond

// recvBlocking parks in poll(2) until a batch is read (recvOnce's results),
// the deadline passes (errTimeout) or the socket is closed.
func (s *udpSock) recvBlocking(deadline time.Time) error {
	for !s.closed.Load() {
		wait := sockPark
		if !deadline.IsZero() {
			if wait = min(wait, time.Until(deadline)); wait <= 0 {
				return errTimeout
			}
		}
		s.pfd[0].Events = unix.POLLIN
		if n, _ := unix.Poll(s.pfd[:], int((wait+time.Millisecond-1)/time.Millisecond)); n > 0 {
			s.recvOnce(s.fd)
			if s.rxErr != unix.EAGAIN && s.rxErr != unix.EINTR {
				return nil
			}
		}
	}
	return net.ErrClosed
}

// waitWritable parks in poll(2) until the socket has room to send.
func (s *udpSock) waitWritable() error {
	for !s.closed.Load() {
		s.pfd[0].Events = unix.POLLOUT
		if n, _ := unix.Poll(s.pfd[:], int(sockPark/time.Millisecond)); n > 0 {
			return nil
		}
	}
	return net.ErrClosed
}

// Addr is the socket's local address.
func (s *udpSock) Addr() string { return s.local.String() }

// Close closes the socket; a parked receive returns within sockPark.
func (s *udpSock) Close() {
	s.closed.Store(true)
	s.file.Close()
}

// detachUDP returns conn's socket as a file outside the Go netpoller and
// closes conn (see newUDPSock).
func detachUDP(conn *net.UDPConn) (*os.File, error) {
	defer conn.Close()
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	if err := unix.SetNonblock(fd, false); err != nil { // so os.NewFile leaves it alone
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "raw-udp"), nil
}
