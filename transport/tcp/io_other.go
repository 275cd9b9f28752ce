//go:build !linux || erpc_portable

package tcp

import (
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// Elsewhere than Linux each connection has a reader goroutine, which
// cuts the stream into frames and copies them into the transport's inbox
// (Receive takes it whole), and a writer goroutine, which writes the
// outbox with blocking writes (net.Buffers would gather, but the outbox is
// one buffer already).

type connIO struct {
	kick    chan struct{} // capacity 1: the outbox has bytes for the writer
	writing bool          // the writer holds a buffer it is writing
	outFree []byte        // the writer's other buffer
}

type transportIO struct {
	in   inbox         // frames read, waiting for Receive
	wake chan struct{} // capacity 1: a Wake or a frame arrived
}

func (t *Transport) initIO() error {
	t.tio.wake = make(chan struct{}, 1)
	t.tio.in.init()
	return nil
}

func (t *Transport) closeIO() { t.tio.in.close() }

func (c *conn) initIO() { c.kick = make(chan struct{}, 1) }

// writeDirect writes nothing here: the writer goroutine writes everything.
func (c *conn) writeDirect([]transport.Message) (int, error) { return 0, nil }

func (c *conn) writerIdle() bool { return !c.writing }

func (c *conn) deferWrite() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// kickSetup: the writer, started with the reader, writes what was sent
// before the connection was ready (startIO kicks it).
func (c *conn) kickSetup() {}

// startIO starts the connection's reader and writer.
func (c *conn) startIO() {
	c.mu.Lock()
	c.ready = true
	c.mu.Unlock()
	c.t.wg.Add(2)
	go c.writer()
	go c.reader()
	c.deferWrite()
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

// reader hands the peer's frames to the inbox.
func (c *conn) reader() {
	defer c.t.wg.Done()
	t := c.t
	var err error
	filledUp := false
	for {
		if c.filled > 0 {
			used, wasEmpty, ok, perr := t.tio.in.put(c.addr, c.rbuf[:c.filled])
			if !ok {
				return
			}
			if wasEmpty && used > 0 {
				t.Wake()
			}
			if perr != nil {
				c.cutOff(perr)
				return
			}
			c.filled = copy(c.rbuf, c.rbuf[used:c.filled])
		}
		if err != nil {
			c.fail(err)
			return
		}
		c.growRead(filledUp)
		var n int
		n, err = c.nc.Read(c.rbuf[c.filled:])
		filledUp = n == len(c.rbuf)-c.filled
		c.filled += n
	}
}

// Receive passes every frame read so far to fn.
func (t *Transport) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	if t.closed.Load() {
		return 0, transport.ErrClosed
	}
	return t.tio.in.take(fn), nil
}

// Wait blocks until a frame arrived, a peer went, deadline passes or Wake.
func (t *Transport) Wait(deadline time.Time) error {
	if t.closed.Load() {
		return transport.ErrClosed
	}
	if t.tio.in.pending() || t.ngone.Load() != 0 {
		return nil
	}
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return nil
		}
		t.timer.Reset(d)
		defer t.timer.Stop()
		timeout = t.timer.C
	}
	select {
	case <-t.tio.wake:
	case <-timeout:
	case <-t.done:
		return transport.ErrClosed
	}
	return nil
}

// Wake ends a current or next Wait.
func (t *Transport) Wake() {
	select {
	case t.tio.wake <- struct{}{}:
	default:
	}
}
