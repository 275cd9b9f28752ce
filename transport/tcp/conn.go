package tcp

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// conn is one TCP connection to a peer endpoint, carrying every session
// between the two. A goroutine of its own sets it up: the dial (for a
// connection this side opens), our preface, and the check of the peer's.
// Then it carries frames: on Linux the loop reads and writes the socket
// itself (io_linux.go); elsewhere a reader and a writer goroutine do
// (io_other.go).
type conn struct {
	t    *Transport
	addr netip.AddrPort // the peer, as Receive reports it and Send names it
	dead atomic.Bool
	once sync.Once
	gone chan struct{} // closed when the connection ends

	mu     sync.Mutex
	nc     *net.TCPConn // nil while dialing
	rc     syscall.RawConn
	out    []byte // frames waiting to be written, in order
	ready  bool   // frames may be written now (the loop or the writer has the socket)
	dialed bool   // opened by this side (set before the connection is shared)
	mapped bool   // t.conns[addr] is this connection, its end reported (guarded by t.mu)

	rbuf   []byte // frames read, the last one perhaps partial
	filled int    // bytes in rbuf

	connIO // the platform's part
}

func newConn(t *Transport, addr netip.AddrPort) *conn {
	c := &conn{t: t, addr: addr, gone: make(chan struct{})}
	c.initIO()
	return c
}

// setUp runs on the connection's own goroutine once it has a socket:
// our preface, the peer's (within DialTimeout), then the connection is
// the peer's and carries frames (startIO).
func (c *conn) setUp(nc *net.TCPConn) {
	_ = nc.SetNoDelay(true)
	rc, _ := nc.SyscallConn()
	c.mu.Lock()
	c.nc, c.rc = nc, rc
	c.mu.Unlock()
	if c.dead.Load() { // failed (Close) while dialing
		nc.Close()
		return
	}
	t := c.t
	_ = nc.SetDeadline(time.Now().Add(t.opts.DialTimeout))
	if _, err := nc.Write(preface[:]); err != nil {
		c.fail(err)
		return
	}
	c.rbuf = make([]byte, frameHead+MaxDatagram+64<<10)
	filled, err := c.readPreface(c.rbuf)
	if err != nil {
		if errors.Is(err, errBadPreface) {
			t.stats.badPreface.Add(1)
			t.log.Warn("erpc tcp: connection cut off", "peer", nc.RemoteAddr().String(), "err", err)
		}
		c.fail(err)
		return
	}
	_ = nc.SetDeadline(time.Time{})
	c.filled = filled
	if !t.register(c) {
		c.fail(nil)
		return
	}
	c.startIO()
}

// readPreface reads the peer's preface into buf, checking each byte as it
// comes, so a peer that speaks something else is cut off on its first
// bytes however few it sends. It returns how many bytes past the preface
// buf holds (moved to its start).
func (c *conn) readPreface(buf []byte) (int, error) {
	filled := 0
	for filled < prefaceLen {
		n, err := c.nc.Read(buf[filled:])
		filled += n
		if m := min(filled, prefaceLen); string(buf[:m]) != string(preface[:m]) {
			return 0, checkPreface(buf[:prefaceLen])
		}
		if err != nil && filled < prefaceLen {
			return 0, err
		}
	}
	return copy(buf, buf[prefaceLen:filled]), nil
}

// cutOff ends a connection whose peer sent a malformed frame.
func (c *conn) cutOff(err error) {
	c.t.stats.malformed.Add(1)
	c.t.log.Warn("erpc tcp: connection cut off", "peer", c.addr.String(), "err", err)
	c.fail(err)
}

// fail ends the connection (err nil: closed by this side). If it was the
// peer's connection, the peer is reported gone, and the next Send to it
// dials again.
func (c *conn) fail(err error) {
	c.once.Do(func() {
		c.dead.Store(true)
		close(c.gone)
		c.mu.Lock()
		nc := c.nc
		c.mu.Unlock()
		if nc != nil {
			nc.Close()
		}
		c.t.forget(c, err)
	})
}
