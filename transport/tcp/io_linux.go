//go:build linux && !erpc_portable

package tcp

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

// On Linux the loop reads and writes the connections itself, with
// non-blocking system calls on their descriptors (through RawConn.Control,
// so a concurrent Close cannot hand a descriptor to someone else
// mid-call): no goroutine or lock between a socket and the engine, and
// frames go to the engine straight from the connection's read buffer.
// The connections are in an epoll set of the transport's own: Receive asks
// it (without waiting) which are readable, or writable again while an
// outbox waits; Wait parks on the set's descriptor, wrapped in an os.File,
// in the Go netpoller. Wake interrupts it by moving the read deadline into
// the past after raising a flag that Wait checks (as package udp does).
// A spinning loop depends on no goroutine the netpoller would have to
// wake: a reader goroutine's wake-up waited for the scheduler's netpoll,
// which a process whose processors all spin polls only from sysmon (1.7-5
// ms per 32-byte call on loopback, against 0.17 ms over UDP, in the same
// run on a loaded machine).

type connIO struct {
	kick    chan struct{} // capacity 1: the outbox has bytes, or the loop adopted the connection (startIO waits)
	adopted bool          // the loop reads the connection (guarded by mu)
	fd      int32         // the descriptor, once the loop adopted the connection
	outOff  int           // bytes of out already written
	flushed bool          // in the loop's flush list
	wantOut bool          // registered for EPOLLOUT
	// The loop's scratch for system calls (writeDirect, flush, read).
	iov    []unix.Iovec
	heads  []byte
	wrote  int
	wErr   error
	rn     int
	rErr   error
	writeF func(fd uintptr)
	flushF func(fd uintptr)
	readF  func(fd uintptr)
	ctlOp  int
	ctlF   func(fd uintptr)
}

type transportIO struct {
	ep      *os.File // the epoll set, in the netpoller: Wait parks on it
	erc     syscall.RawConn
	epfd    int
	woken   atomic.Bool
	readyFn func(fd uintptr) bool
	probe   [1]unix.EpollEvent
	events  [128]unix.EpollEvent

	// Owned by the loop.
	byFD       map[int32]*conn
	flush      []*conn // connections whose outbox waits to be written
	flushSpare []*conn

	fresh  []*conn // set up and waiting for the loop (guarded by t.mu)
	nfresh atomic.Int32
}

func (t *Transport) initIO() error {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(fd, true); err != nil { // so the netpoller takes it
		unix.Close(fd)
		return err
	}
	t.tio.epfd = fd
	t.tio.ep = os.NewFile(uintptr(fd), "erpc-tcp-epoll")
	if t.tio.erc, err = t.tio.ep.SyscallConn(); err != nil {
		t.tio.ep.Close()
		return err
	}
	t.tio.byFD = make(map[int32]*conn)
	t.tio.readyFn = t.ready
	return nil
}

func (t *Transport) closeIO() { t.tio.ep.Close() }

func (c *conn) initIO() {
	c.fd = -1
	c.kick = make(chan struct{}, 1)
	c.writeF, c.flushF, c.readF, c.ctlF = c.writeOn, c.flushOn, c.readOn, c.ctlOn
}

func (c *conn) writerIdle() bool { return true }

// deferWrite puts the connection in the loop's flush list (Send runs on
// the loop).
func (c *conn) deferWrite() {
	if !c.flushed {
		c.flushed = true
		c.t.tio.flush = append(c.t.tio.flush, c)
	}
}

// startIO hands the connection to the loop, which reads it from then on,
// and writes what is sent until the loop has it (the outbox) from here,
// with blocking writes: the loop may never run again (a sender that only
// sends owes it nothing). Once the loop has it and the outbox is empty,
// the connection is ready: Send and the loop write it. The loop has the
// connection before the first write: a setup goroutine that wrote a
// large outbox before its loop read anything deadlocked against a peer
// doing the same (TCP's simultaneous open), neither reading.
func (c *conn) startIO() {
	t := c.t
	t.mu.Lock()
	t.tio.fresh = append(t.tio.fresh, c)
	t.tio.nfresh.Store(int32(len(t.tio.fresh)))
	t.mu.Unlock()
	t.Wake()
	for {
		c.mu.Lock()
		buf := c.out
		if len(buf) == 0 {
			if c.adopted {
				c.ready = true
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			select {
			case <-c.kick:
			case <-c.gone:
				return
			}
			continue
		}
		c.out = nil
		c.mu.Unlock()
		if _, err := c.nc.Write(buf); err != nil {
			c.fail(err)
			return
		}
		c.mu.Lock()
		if c.out == nil {
			c.out = buf[:0]
		}
		c.mu.Unlock()
	}
}

// kickSetup tells startIO that the outbox has bytes.
func (c *conn) kickSetup() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Receive adopts connections set up since the last call, writes waiting
// outboxes, and passes every frame the readable connections hold to fn.
func (t *Transport) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	if t.closed.Load() {
		return 0, transport.ErrClosed
	}
	n := 0
	if t.tio.nfresh.Load() != 0 {
		n += t.adopt(fn)
	}
	if len(t.tio.flush) > 0 {
		t.flushAll()
	}
	k, err := unix.EpollWait(t.tio.epfd, t.tio.events[:], 0)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return n, err
	}
	for i := range max(k, 0) {
		ev := &t.tio.events[i]
		c := t.tio.byFD[ev.Fd]
		if c == nil || c.dead.Load() {
			if c != nil {
				delete(t.tio.byFD, ev.Fd)
			}
			continue
		}
		if ev.Events&unix.EPOLLOUT != 0 {
			c.flushOut()
		}
		if ev.Events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR|unix.EPOLLRDHUP) != 0 {
			n += c.readFrames(fn)
		}
	}
	return n, nil
}

// adopt registers the connections set up since the last call in the
// epoll set (watching for EPOLLOUT too if Send left an outbox since), and
// delivers the frames that came with their prefaces.
func (t *Transport) adopt(fn func(netip.AddrPort, []byte)) int {
	t.mu.Lock()
	fresh := t.tio.fresh
	t.tio.fresh = nil
	t.tio.nfresh.Store(0)
	t.mu.Unlock()
	n := 0
	for _, c := range fresh {
		c.ctlOp = unix.EPOLL_CTL_ADD
		if err := c.rc.Control(c.ctlF); err != nil || c.fd < 0 || c.dead.Load() {
			c.fail(err)
			continue
		}
		t.tio.byFD[c.fd] = c
		c.mu.Lock()
		c.adopted = true
		c.mu.Unlock()
		c.kickSetup()
		n += c.deliver(fn)
	}
	return n
}

// ctlOn adds fd to the epoll set, or modifies its events (c.ctlOp).
func (c *conn) ctlOn(fd uintptr) {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	if c.wantOut {
		ev.Events |= unix.EPOLLOUT
	}
	if unix.EpollCtl(c.t.tio.epfd, c.ctlOp, int(fd), &ev) == nil {
		c.fd = int32(fd)
	}
}

// readFrames reads what the socket holds (a few reads at most, so one
// connection cannot hold the loop) and passes its frames to fn.
func (c *conn) readFrames(fn func(netip.AddrPort, []byte)) int {
	n := 0
	filledUp := false
	for range 4 {
		c.growRead(filledUp)
		c.rn, c.rErr = 0, nil
		space := len(c.rbuf) - c.filled
		if err := c.rc.Control(c.readF); err != nil {
			c.rErr = err
		}
		filledUp = c.rn == space
		c.filled += c.rn
		n += c.deliver(fn)
		if c.dead.Load() {
			return n
		}
		switch {
		case c.rErr != nil:
			c.loopFail(c.rErr)
			return n
		case c.rn == 0:
			return n // nothing waiting: EAGAIN
		case c.rn < space:
			return n // the socket is drained
		}
	}
	return n
}

// errEOF is a peer that closed its end.
var errEOF = errors.New("tcp: connection closed by the peer")

// readOn is readFrames's read on fd: rn bytes, 0 with no error if none
// are waiting, errEOF at the end of the stream.
func (c *conn) readOn(fd uintptr) {
	for {
		n, err := unix.Read(int(fd), c.rbuf[c.filled:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
		case err != nil:
			c.rErr = err
		case n == 0:
			c.rErr = errEOF
		default:
			c.rn = n
		}
		return
	}
}

// deliver passes the whole frames in rbuf to fn, keeping a partial one.
func (c *conn) deliver(fn func(netip.AddrPort, []byte)) int {
	if c.filled == 0 {
		return 0
	}
	n := 0
	used, err := parseFrames(c.rbuf[:c.filled], MaxDatagram, func(d []byte) {
		fn(c.addr, d)
		n++
	})
	c.filled = copy(c.rbuf, c.rbuf[used:c.filled])
	if err != nil {
		c.cutOff(err)
		c.forgetFD()
	}
	return n
}

// loopFail ends the connection from the loop.
func (c *conn) loopFail(err error) {
	c.fail(err)
	c.forgetFD()
}

func (c *conn) forgetFD() {
	if c.fd >= 0 && c.t.tio.byFD[c.fd] == c {
		delete(c.t.tio.byFD, c.fd)
	}
}

// flushAll writes the waiting outboxes; those the kernel does not take
// whole wait for EPOLLOUT.
func (t *Transport) flushAll() {
	list := t.tio.flush
	t.tio.flush = t.tio.flushSpare[:0]
	for _, c := range list {
		c.flushed = false
		c.flushOut()
	}
	clear(list)
	t.tio.flushSpare = list[:0]
}

// flushOut writes what it can of the outbox, watching for EPOLLOUT while
// some waits.
func (c *conn) flushOut() {
	if c.dead.Load() {
		return
	}
	c.mu.Lock()
	c.wrote, c.wErr = 0, nil
	if c.outOff < len(c.out) {
		if err := c.rc.Control(c.flushF); err != nil {
			c.wErr = err
		}
	}
	c.outOff += c.wrote
	done := c.outOff >= len(c.out)
	if done {
		c.out, c.outOff = c.out[:0], 0
	} else if c.outOff > len(c.out)/2 {
		c.out = c.out[:copy(c.out, c.out[c.outOff:])]
		c.outOff = 0
	}
	err := c.wErr
	c.mu.Unlock()
	if err != nil {
		c.loopFail(err)
		return
	}
	if c.wantOut != !done { // the rest goes when the socket is writable
		c.wantOut = !done
		c.ctlOp = unix.EPOLL_CTL_MOD
		_ = c.rc.Control(c.ctlF)
	}
}

// flushOn is flushOut's write on fd.
func (c *conn) flushOn(fd uintptr) {
	for {
		n, err := unix.Write(int(fd), c.out[c.outOff:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
		case err != nil:
			c.wErr = err
		default:
			c.wrote = n
		}
		return
	}
}

// ready reports whether Wait should return: woken, or a connection of the
// set is readable (or writable while its outbox waits).
func (t *Transport) ready(epfd uintptr) bool {
	if t.tio.woken.Swap(false) || t.tio.nfresh.Load() != 0 || t.ngone.Load() != 0 {
		return true
	}
	n, _ := unix.EpollWait(int(epfd), t.tio.probe[:], 0)
	return n > 0
}

// Wait parks in the netpoller until a connection is ready, a connection
// was set up or went, the deadline passes, or Wake.
func (t *Transport) Wait(deadline time.Time) error {
	if t.closed.Load() {
		return transport.ErrClosed
	}
	if t.tio.woken.Swap(false) || t.tio.nfresh.Load() != 0 || t.ngone.Load() != 0 {
		return nil
	}
	if err := t.tio.ep.SetReadDeadline(deadline); err != nil {
		return transport.ErrClosed
	}
	err := t.tio.erc.Read(t.tio.readyFn)
	switch {
	case err == nil, errors.Is(err, os.ErrDeadlineExceeded):
		return nil
	case t.closed.Load(), errors.Is(err, os.ErrClosed), errors.Is(err, net.ErrClosed):
		return transport.ErrClosed
	}
	return err
}

// aLongTimeAgo is a read deadline that has always passed.
var aLongTimeAgo = time.Unix(1, 0)

// Wake ends a current or next Wait.
func (t *Transport) Wake() {
	t.tio.woken.Store(true)
	_ = t.tio.ep.SetReadDeadline(aLongTimeAgo)
}
