//go:build linux && !erpc_portable

package udp

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// Transport is a UDP socket driven with recvmmsg and sendmmsg on the
// socket's file descriptor (through RawConn.Control, so a concurrent Close
// cannot hand the descriptor to someone else mid-call). Trains of equal-sized
// datagrams to one peer go out as one GSO send, and the receive side asks for
// GRO once bursts arrive (noteBatch), so a multi-packet message crosses the
// kernel as a few large buffers instead of one small one per packet. A
// client-only transport connects its socket to its one peer (solo).
//
// The sockets are in no epoll set while the loop runs, the Go netpoller's
// included (see detach: a registration costs every datagram). Waiting
// still uses the netpoller: Wait puts the sockets (one per path) in an
// epoll set of their own and parks on the set's descriptor, wrapped in an
// os.File, until a socket is readable, then takes them out again. Wake
// interrupts it by moving the read deadline into the past after raising a
// flag that Wait checks, so a wake-up is never lost. The os.File matters: a net.Conn's RawConn wraps the
// deadline's error in a fresh *net.OpError, an allocation every time the
// loop is woken or its timer fires, which is every call on a busy machine.
type Transport struct {
	packetSize int          // Options.PacketSize, resolved
	conn       *net.UDPConn // as Listen opened it; init detaches it into sock and closes it
	sock       *os.File     // the socket, outside the Go netpoller (detach)
	rc         syscall.RawConn
	local      netip.AddrPort
	bound      netip.Addr // the address the socket is bound to (Reaches)
	network    string     // Options.Network: "udp", "udp4" or "udp6" (Reaches)
	v6         bool       // an AF_INET6 socket: IPv4 peers are addressed as v4-mapped

	woken  atomic.Bool
	closed atomic.Bool

	// The sockets of paths 1 and up (Options.Paths), and the set Wait
	// parks on when there are any.
	paths []*pathConn
	set   *pathSet

	// Owned by the event loop (Receive, Send, Wait).
	byPath [][]transport.Message // Send's per-path scratch
	rx     rxBatch
	tx     txBatch
	gso    bool // UDP_SEGMENT works; cleared when the kernel refuses it
	rxN    int
	rxVlen int // datagrams the next recvmmsg asks for (1: recvOne)
	// rxBatched: the last receive found datagrams, so the next asks for a
	// batch (recvmmsg); after an empty one it asks for one (recvOne).
	// With a datagram waiting, recvmmsg's hunt for a second costs a
	// ping-pong 0.3-0.4 us a round trip over recvmsg (8.7-8.9 against
	// 9.1-10.4 us on loopback); an empty socket costs both the same.
	rxBatched bool
	rxAvg     int // mean size of the last batch's datagrams
	rxErr     syscall.Errno
	txEnd     int // entries in tx to send
	txDone    int
	txGSOErr  bool
	txFull    bool // the last sendBatch stopped at EAGAIN
	recvFn    func(fd uintptr)
	sendFn    func(fd uintptr)
	readyFn   func(fd uintptr) bool
	solo      solo // the one peer of a client-only transport (Options.ClientOnly)
	groOn     bool // UDP_GRO is on: see noteBatch
	stashed   bool // Poll received a datagram into rx's message 0
	pollN     int
	pollIdle  func() bool
	pollFn    func(fd uintptr)
}

func (t *Transport) init(opts Options) error {
	sock, err := detach(t.conn)
	if err != nil {
		return err
	}
	t.sock, t.conn = sock, nil
	rc, err := sock.SyscallConn()
	if err != nil {
		sock.Close()
		return err
	}
	t.rc = rc
	var serr error
	if err := rc.Control(func(fd uintptr) {
		sa, err := unix.Getsockname(int(fd))
		if err != nil {
			serr = err
			return
		}
		_, t.v6 = sa.(*unix.SockaddrInet6)
		// A dual-stack socket never connects (Options.ClientOnly).
		t.solo.allowed = opts.ClientOnly && opts.Paths <= 1 && !t.dualStack(fd)
		// Both are best effort: without them the kernel simply handles
		// one datagram at a time.
		t.gso = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT, 0) == nil
	}); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	t.rx = newRxBatch()
	t.tx = newTxBatch()
	t.recvFn = t.recvBatch
	t.sendFn = t.sendBatch
	t.readyFn = t.ready
	t.pollFn = t.pollOn
	t.set, err = newPathSet(rc)
	return err
}

// dualStack reports whether the socket is an IPv6 one, bound to all
// interfaces, that carries IPv4 too (IPV6_V6ONLY off). One bound to a
// particular IPv6 address talks to IPv6 peers only, whatever the option.
func (t *Transport) dualStack(fd uintptr) bool {
	if !t.v6 || !t.bound.IsUnspecified() {
		return false
	}
	only, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
	return err != nil || only == 0
}

// setBuffers asks for size-byte socket buffers, past the sysctl limits when
// the process may (root), since a burst of sessions overflows the default.
func setBuffers(conn *net.UDPConn, size int) {
	rc, err := conn.SyscallConn()
	if err == nil {
		rc.Control(func(fd uintptr) {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size) != nil {
				_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, size)
			}
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, size) != nil {
				_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, size)
			}
		})
	}
}

// Wait parks in the netpoller until the socket is readable, the deadline
// passes, or Wake.
func (t *Transport) Wait(deadline time.Time) error {
	if t.woken.Swap(false) {
		return nil
	}
	if err := t.set.arm(); err != nil {
		return transport.ErrClosed
	}
	defer t.set.disarm()
	if err := t.set.ep.SetReadDeadline(deadline); err != nil {
		return transport.ErrClosed
	}
	err := t.set.rc.Read(t.readyFn)
	switch {
	case err == nil, errors.Is(err, os.ErrDeadlineExceeded):
		return nil
	case t.closed.Load(), errors.Is(err, os.ErrClosed), errors.Is(err, net.ErrClosed):
		return transport.ErrClosed // the set's file says "use of closed file"
	}
	return err
}

// aLongTimeAgo is a read deadline that has always passed.
var aLongTimeAgo = time.Unix(1, 0)

// ready reports whether Wait should return: woken, or a socket of the set
// has a datagram (or an error) waiting.
func (t *Transport) ready(epfd uintptr) bool {
	return t.woken.Swap(false) || t.set.ready(epfd)
}

// Wake ends a current or next Wait.
func (t *Transport) Wake() {
	t.woken.Store(true)
	_ = t.set.ep.SetReadDeadline(aLongTimeAgo)
}

// Close closes the sockets; a Wait in progress returns ErrClosed. Closing
// twice is harmless.
func (t *Transport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	var err error
	if t.sock != nil { // nil: init failed, and detach closed conn
		err = t.sock.Close()
	}
	for _, pc := range t.paths {
		pc.sock.Close()
	}
	if t.set != nil {
		t.set.ep.Close()
	}
	return err
}
