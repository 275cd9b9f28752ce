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
// between the two. Its reader goroutine checks the peer's preface, then
// cuts the stream into frames for the inbox. What the loop sends goes
// straight to the socket when nothing waits before it (a non-blocking
// writev on Linux), else into the outbox, which the writer goroutine
// drains with blocking writes: the loop never blocks on a slow peer.
type conn struct {
	t    *Transport
	addr netip.AddrPort // the peer, as Receive reports it and Send names it
	kick chan struct{}  // capacity 1: the outbox has bytes for the writer
	dead atomic.Bool
	once sync.Once
	gone chan struct{} // closed when the connection ends

	mu      sync.Mutex
	nc      *net.TCPConn // nil while dialing
	rc      syscall.RawConn
	out     []byte // frames waiting for the writer, the preface first
	outFree []byte // the writer's other buffer
	writing bool   // the writer holds a buffer it is writing
	dialed  bool   // opened by this side (set before the connection is shared)
	mapped  bool   // t.conns[addr] is this connection, its end reported (guarded by t.mu)

	// The loop's scratch for a direct write (send_linux.go).
	iov    []iovec
	heads  []byte
	wrote  int
	wErr   error
	writeF func(fd uintptr)
}

func newConn(t *Transport, addr netip.AddrPort) *conn {
	c := &conn{t: t, addr: addr, kick: make(chan struct{}, 1), gone: make(chan struct{})}
	c.out = append(make([]byte, 0, 64<<10), preface[:]...)
	c.writeF = c.writeOn
	return c
}

// attach gives the connection its socket and starts its goroutines.
func (c *conn) attach(nc *net.TCPConn) {
	_ = nc.SetNoDelay(true)
	rc, _ := nc.SyscallConn()
	c.mu.Lock()
	c.nc, c.rc = nc, rc
	c.mu.Unlock()
	if c.dead.Load() { // failed (Close) while dialing
		nc.Close()
		return
	}
	c.t.wg.Add(2)
	go c.writer()
	go c.reader()
	c.signal()
}

func (c *conn) signal() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// writer writes what the loop left in the outbox.
func (c *conn) writer() {
	defer c.t.wg.Done()
	for {
		select {
		case <-c.kick:
		case <-c.gone:
			return
		}
		for {
			c.mu.Lock()
			buf := c.out
			if len(buf) == 0 {
				c.mu.Unlock()
				break
			}
			c.out, c.writing = c.outFree[:0], true
			c.mu.Unlock()
			_, err := c.nc.Write(buf)
			c.mu.Lock()
			c.outFree, c.writing = buf[:0], false
			c.mu.Unlock()
			if err != nil {
				c.fail(err)
				return
			}
		}
	}
}

// reader checks the peer's preface, then hands its frames to the inbox.
func (c *conn) reader() {
	defer c.t.wg.Done()
	t := c.t
	buf := make([]byte, frameHead+MaxDatagram+64<<10)
	filled, err := c.readPreface(buf)
	if err != nil {
		if errors.Is(err, errBadPreface) {
			t.stats.badPreface.Add(1)
			t.log.Warn("erpc tcp: connection cut off", "peer", c.nc.RemoteAddr().String(), "err", err)
		}
		c.fail(err)
		return
	}
	if !t.register(c) {
		c.fail(nil)
		return
	}
	for {
		if filled > 0 {
			used, wasEmpty, ok, perr := t.in.put(c.addr, buf[:filled], MaxDatagram, parseFrames)
			if !ok {
				return
			}
			if wasEmpty && used > 0 {
				t.Wake()
			}
			if perr != nil {
				t.stats.malformed.Add(1)
				t.log.Warn("erpc tcp: connection cut off", "peer", c.nc.RemoteAddr().String(), "err", perr)
				c.fail(perr)
				return
			}
			filled = copy(buf, buf[used:filled])
		}
		if err != nil {
			c.fail(err)
			return
		}
		var n int
		n, err = c.nc.Read(buf[filled:])
		filled += n
	}
}

// readPreface reads the peer's preface into buf, within DialTimeout,
// checking each byte as it comes, so a peer that speaks something else
// is cut off on its first bytes however few it sends. It returns how many
// bytes past the preface buf holds.
func (c *conn) readPreface(buf []byte) (int, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(c.t.opts.DialTimeout))
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
	_ = c.nc.SetReadDeadline(time.Time{})
	return copy(buf, buf[prefaceLen:filled]), nil
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
