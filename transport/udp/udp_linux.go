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
	"unsafe"

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

// receiveBudget bounds the bytes one Receive hands to the engine: the loop
// sends its replies (the peers' credits) only after Receive returns, and
// 128 datagrams of 64 KiB take several milliseconds to copy on a cold
// heap, long enough for a peer's retransmission timer to fire.
const receiveBudget = 256 << 10

// Receive reads batches until the socket is empty or about receiveBudget
// bytes came in (bounded, so a flood cannot starve the loop's timers and
// sends) and passes each datagram to fn, cutting GRO trains back into
// datagrams.
func (t *Transport) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	if t.stashed {
		return t.takeStash(fn), nil // at once, as a lone receive's datagram
	}
	total, bytes, err := t.receiveOn(t.rc, fn, 0, 0)
	for _, pc := range t.paths {
		if err != nil || bytes >= receiveBudget {
			break
		}
		total, bytes, err = t.receiveOn(pc.rc, fn, total, bytes)
	}
	return total, err
}

// receiveOn reads batches from one socket, as Receive describes.
func (t *Transport) receiveOn(rc syscall.RawConn, fn func(from netip.AddrPort, data []byte), total, bytes int) (int, int, error) {
	for range 4 {
		// Ask for as many datagrams as the budget has room for, judging
		// by the size of the last ones; for one only (recvmsg, cheaper
		// than recvmmsg when a datagram is there: see rxBatched) while
		// the socket was last found empty.
		t.rxVlen = batchSize
		if t.rxAvg > 0 {
			t.rxVlen = min(max((receiveBudget-bytes)/t.rxAvg, 1), batchSize)
		}
		single := !t.rxBatched
		if single {
			t.rxVlen = 1
		}
		if err := rc.Control(t.recvFn); err != nil {
			return total, bytes, transport.ErrClosed
		}
		t.rxBatched = t.rxN > 0
		if t.rxN <= 0 {
			// EAGAIN: empty. Anything else (an ICMP error queued on the
			// socket) is the network losing something: not our failure.
			return total, bytes, nil
		}
		got := 0
		for i := range t.rxN {
			total += t.deliver(i, fn)
			got += int(t.rx.hdrs[i].Len)
		}
		bytes += got
		t.rxAvg = max(got/t.rxN, 1)
		t.noteBatch()
		if single || t.rxN < t.rxVlen || bytes >= receiveBudget {
			break // single: the next turn asks for a batch
		}
	}
	return total, bytes, nil
}

// recvBatch reads one batch without blocking (a raw system call, see
// sendBatch).
func (t *Transport) recvBatch(fd uintptr) {
	t.rx.reset(t.rxVlen)
	for {
		var n uintptr
		var errno syscall.Errno
		if t.rxVlen == 1 {
			n, errno = t.recvOne(fd)
		} else {
			n, _, errno = unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&t.rx.hdrs[0])),
				uintptr(t.rxVlen), unix.MSG_DONTWAIT, 0, 0)
		}
		if errno == unix.EINTR {
			continue
		}
		t.rxN, t.rxErr = int(n), errno
		if errno != 0 {
			t.rxN = 0
		}
		return
	}
}

// deliver passes message i of the last batch to fn, one datagram per GRO
// segment.
func (t *Transport) deliver(i int, fn func(netip.AddrPort, []byte)) int {
	h := &t.rx.hdrs[i]
	if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
		return 0 // larger than any datagram we accept
	}
	from := decodeAddr(&t.rx.names[i])
	data := t.rx.data(i)
	seg := t.rx.groSize(i)
	if seg <= 0 || seg >= len(data) {
		fn(from, data)
		return 1
	}
	n := 0
	for len(data) > 0 {
		k := min(seg, len(data))
		fn(from, data[:k:k])
		data = data[k:]
		n++
	}
	return n
}

// Send writes msgs with as few system calls as it can: sendmmsg batches,
// and GSO trains for runs of equal-sized datagrams to one peer; with
// several paths, one batch per path, from that path's socket.
func (t *Transport) Send(msgs []transport.Message) error {
	if len(t.paths) == 0 {
		if t.solo.allowed {
			t.solo.check(t.rc, msgs, t.v6)
		}
		return t.sendOn(t.rc, msgs)
	}
	if t.byPath == nil {
		t.byPath = make([][]transport.Message, 1+len(t.paths))
	}
	for _, m := range msgs {
		p := int(m.Path)
		if p >= len(t.byPath) {
			p = 0
		}
		t.byPath[p] = append(t.byPath[p], m)
	}
	var err error
	for p, batch := range t.byPath {
		if len(batch) == 0 {
			continue
		}
		rc := t.rc
		if p > 0 {
			rc = t.paths[p-1].rc
		}
		if e := t.sendOn(rc, batch); e != nil && (err == nil || e == transport.ErrClosed) {
			err = e
		}
		clear(batch)
		t.byPath[p] = batch[:0]
	}
	return err
}

// sendOn sends msgs from one socket.
func (t *Transport) sendOn(rc syscall.RawConn, msgs []transport.Message) error {
	var err error
	for len(msgs) > 0 {
		used, tooLarge := t.build(msgs)
		if tooLarge {
			err = transport.ErrTooLarge
		}
		cerr := rc.Control(t.sendFn)
		for cerr == nil && t.txFull {
			// The socket buffer is full: wait until it drains rather
			// than drop what the protocol would only resend.
			if cerr = waitWritable(rc, t.closed.Load); cerr == nil {
				cerr = rc.Control(t.sendFn)
			}
		}
		if cerr != nil {
			t.clearTx()
			return transport.ErrClosed
		}
		if t.txGSOErr {
			// The kernel (or the device) refused a GSO train: send one
			// datagram per entry from now on, starting with the train.
			t.gso = false
			used = t.tx.first[t.txDone]
		}
		t.clearTx()
		msgs = msgs[used:]
	}
	return err
}

// build fills tx with entries for the head of msgs and returns how many
// messages it covered.
func (t *Transport) build(msgs []transport.Message) (used int, tooLarge bool) {
	tx := &t.tx
	tx.iovs = tx.iovs[:0]
	tx.first = tx.first[:0]
	e := 0
	i := 0
	for i < len(msgs) && e < batchSize {
		m := &msgs[i]
		size := m.Len()
		if size > MaxDatagram {
			tooLarge = true
			i++
			continue
		}
		h := &tx.hdrs[e].Hdr
		h.Namelen = encodeAddr(&tx.names[e], m.To, t.v6)
		if h.Namelen == 0 {
			i++ // unreachable from this socket's family: the network drops it
			continue
		}
		if t.solo.connected {
			h.Namelen = 0 // to the socket's peer (solo.check saw to it)
		}
		if cap(tx.iovs)-len(tx.iovs) < 2*maxGSOSegments {
			break // the iovecs are pointed into: they must never grow
		}
		start := len(tx.iovs)
		tx.first = append(tx.first, i)
		j, total := i, 0
		for j < len(msgs) && j-i < maxGSOSegments {
			n := &msgs[j]
			l := n.Len()
			// A GSO train is equal-sized datagrams (the last may be
			// shorter but not empty) to one peer, within one datagram's
			// worth of bytes.
			if j > i && (!t.gso || n.To != m.To || l > size || l == 0 || total+l > MaxDatagram) {
				break
			}
			tx.addIov(n.Head)
			tx.addIov(n.Payload)
			total += l
			j++
			if l < size {
				break // a shorter datagram ends a train
			}
		}
		if len(tx.iovs) > start {
			h.Iov = &tx.iovs[start]
		} else {
			h.Iov = nil // an empty datagram
		}
		h.SetIovlen(len(tx.iovs) - start)
		h.Control = nil
		h.SetControllen(0)
		if j-i > 1 {
			tx.putSegment(e, size)
		}
		e++
		i = j
	}
	tx.first = append(tx.first, i)
	t.txEnd, t.txDone, t.txGSOErr = e, 0, false
	return i, tooLarge
}

func (b *txBatch) addIov(p []byte) {
	if len(p) == 0 {
		return
	}
	b.iovs = append(b.iovs, unix.Iovec{Base: &p[0]})
	b.iovs[len(b.iovs)-1].SetLen(len(p))
}

// sendBatch sends entries txDone..txEnd, stopping early when the socket
// buffer is full (txFull) or the kernel refuses GSO (txGSOErr). The system
// calls never block, so they go in as raw system calls: the usual
// entersyscall/exitsyscall pair costs little, but its P hand-off under a
// busy-polling loop showed up as a second latency mode tens of µs slower.
func (t *Transport) sendBatch(fd uintptr) {
	t.txFull = false
	for t.txDone < t.txEnd {
		var n uintptr
		var errno syscall.Errno
		if t.txEnd-t.txDone == 1 && t.tx.first[t.txDone+1]-t.tx.first[t.txDone] == 1 {
			n, errno = t.tx.sendOne(fd, t.txDone)
		} else {
			n, _, errno = unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&t.tx.hdrs[t.txDone])),
				uintptr(t.txEnd-t.txDone), unix.MSG_DONTWAIT, 0, 0)
		}
		switch {
		case errno == 0:
			t.txDone += int(n)
		case errno == unix.EINTR:
		case errno == unix.EAGAIN:
			t.txFull = true
			return
		case t.tx.first[t.txDone+1]-t.tx.first[t.txDone] > 1 && (errno == unix.EIO || errno == unix.EINVAL):
			t.txGSOErr = true
			return
		default:
			// ENOBUFS, unreachable, refused: the network drops
			// this datagram; the protocol retransmits.
			t.txDone++
		}
	}
}

// clearTx drops the batch's pointers into the caller's buffers.
func (t *Transport) clearTx() {
	clear(t.tx.iovs)
	t.tx.iovs = t.tx.iovs[:0]
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
