package main

import (
	"errors"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// udpSock is a UDP socket read and written with raw recvfrom and sendto
// system calls on its non-blocking descriptor, the way erpc's transport
// does, so that the raw-udp floor waits the same way erpc does: in the
// default mode an EAGAIN parks the goroutine in the Go netpoller (through
// RawConn.Read), with busy set the caller spins on the socket from a
// goroutine locked to its thread and falls back to the netpoller only
// after idle of quiet. The callbacks are bound once, so nothing allocates
// per datagram.
type udpSock struct {
	conn *net.UDPConn
	rc   syscall.RawConn
	fd   uintptr
	busy bool
	idle time.Duration // busy: spin this long without traffic, then park

	rbuf  []byte
	rn    int
	rerr  syscall.Errno
	rfn   func(uintptr) bool
	from  unix.RawSockaddrAny
	flen  uint32
	sbuf  []byte
	serr  syscall.Errno
	sfn   func(uintptr) bool
	to    unix.RawSockaddrAny
	tolen uint32 // 0: the socket is connected

	deadline time.Time // the read deadline set on conn
}

var errTimeout = errors.New("timed out")

// defaultSpin is erpc's default WithSpin.
const defaultSpin = 50 * time.Microsecond

func newUDPSock(conn *net.UDPConn, busy bool, idle time.Duration) (*udpSock, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &udpSock{conn: conn, rc: rc, busy: busy, idle: idle}
	rc.Control(func(fd uintptr) {
		s.fd = fd
		// Large buffers, as erpc asks for: FORCE passes rmem_max as root.
		for _, opt := range []int{unix.SO_RCVBUFFORCE, unix.SO_SNDBUFFORCE} {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, 8<<20) != nil {
				conn.SetReadBuffer(8 << 20)
				conn.SetWriteBuffer(8 << 20)
			}
		}
	})
	s.rfn = func(fd uintptr) bool {
		s.recvOnce(fd)
		return s.rerr != unix.EAGAIN
	}
	s.sfn = func(fd uintptr) bool {
		s.sendOnce(fd)
		return s.serr != unix.EAGAIN
	}
	return s, nil
}

func (s *udpSock) recvOnce(fd uintptr) {
	s.flen = unix.SizeofSockaddrAny
	n, _, e := syscall.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&s.rbuf[0])), uintptr(len(s.rbuf)),
		unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&s.from)), uintptr(unsafe.Pointer(&s.flen)))
	s.rn, s.rerr = int(n), e
}

func (s *udpSock) sendOnce(fd uintptr) {
	var to uintptr
	if s.tolen > 0 {
		to = uintptr(unsafe.Pointer(&s.to))
	}
	_, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&s.sbuf[0])), uintptr(len(s.sbuf)),
		unix.MSG_DONTWAIT, to, uintptr(s.tolen))
	s.serr = e
}

// recv reads one datagram into buf. A non-zero deadline bounds the wait
// (errTimeout).
func (s *udpSock) recv(buf []byte, deadline time.Time) (int, error) {
	s.rbuf = buf
	if s.busy {
		spins := 0
		start := time.Time{}
		for {
			s.recvOnce(s.fd)
			if s.rerr != unix.EAGAIN {
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
				// A locked thread must not park in the netpoller.
				runtime.UnlockOSThread()
				n, err := s.recvBlocking(deadline)
				runtime.LockOSThread()
				return n, err
			}
		}
	} else {
		// Like erpc's default loop (WithSpin, 50 µs): poll a little,
		// yielding, before parking in the netpoller, so that a reply that
		// comes quickly skips two thread wake-ups.
		var start time.Time
		for {
			s.recvOnce(s.fd)
			if s.rerr != unix.EAGAIN {
				break
			}
			now := time.Now()
			if start.IsZero() {
				start = now
			} else if now.Sub(start) > defaultSpin {
				return s.recvBlocking(deadline)
			}
			runtime.Gosched()
		}
	}
	if s.rerr != 0 {
		return 0, s.rerr
	}
	return s.rn, nil
}

func (s *udpSock) recvBlocking(deadline time.Time) (int, error) {
	if !deadline.Equal(s.deadline) {
		s.conn.SetReadDeadline(deadline)
		s.deadline = deadline
	}
	if err := s.rc.Read(s.rfn); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, errTimeout
		}
		return 0, err
	}
	if s.rerr != 0 {
		return 0, s.rerr
	}
	return s.rn, nil
}

// send writes one datagram, to the last sender when replyToLast was called,
// else to the connected peer.
func (s *udpSock) send(buf []byte) error {
	s.sbuf = buf
	s.sendOnce(s.fd)
	for s.serr == unix.EAGAIN {
		if s.busy {
			s.sendOnce(s.fd)
			continue
		}
		if err := s.rc.Write(s.sfn); err != nil {
			return err
		}
	}
	if s.serr != 0 {
		return s.serr
	}
	return nil
}

// replyToLast makes send go to the source of the last datagram received.
func (s *udpSock) replyToLast() {
	s.to, s.tolen = s.from, s.flen
}
