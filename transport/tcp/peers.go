package tcp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// accept takes the connections peers open. A connection counts against
// MaxConns from here; it is known by the peer's address (which, for a
// peer that listens too, is its listening address: see dialOut) once its
// preface checks out (register).
func (t *Transport) accept() {
	defer t.wg.Done()
	for {
		nc, err := t.ln.AcceptTCP()
		if err != nil {
			if t.closed.Load() {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors, say: let some close
			continue
		}
		t.stats.accepted.Add(1)
		c := newConn(t, canonical(nc.RemoteAddr().(*net.TCPAddr).AddrPort()))
		if !t.admit(c) {
			t.stats.refused.Add(1)
			nc.Close()
			continue
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			c.setUp(nc)
		}()
	}
}

// admit counts c against MaxConns, false when at the cap or closed.
func (t *Transport) admit(c *conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() || t.count >= t.opts.MaxConns {
		return false
	}
	t.count++
	if t.all == nil {
		t.all = make(map[*conn]struct{})
	}
	t.all[c] = struct{}{}
	return true
}

// register makes an accepted connection, its preface checked, the peer's:
// Send to its address goes on it. An older accepted connection known by
// the same address is dropped without reporting the peer gone (its
// 4-tuple is taken again, so its peer is gone, and the new one's first
// datagrams may already be with the engine). A connection this side
// dialed to that address stays the peer's: both dialed at once, and ours
// fell back to an ephemeral port (localPortBusy); the accepted one then
// carries the peer's datagrams here, ours ours there. A dialed connection
// is the peer's from the start; false if it no longer is.
func (t *Transport) register(c *conn) bool {
	t.mu.Lock()
	if c.dialed {
		ok := c.mapped
		t.mu.Unlock()
		return ok
	}
	if t.closed.Load() {
		t.mu.Unlock()
		return false
	}
	old := t.conns[c.addr]
	if old != nil && old.dialed {
		t.mu.Unlock()
		return true
	}
	if old != nil {
		old.mapped = false
	}
	t.conns[c.addr] = c
	c.mapped = true
	t.mu.Unlock()
	if old != nil {
		old.fail(nil)
	}
	return true
}

// forget drops an ended connection; if it was its peer's, the peer is
// reported gone.
func (t *Transport) forget(c *conn, err error) {
	t.mu.Lock()
	if _, ok := t.all[c]; ok {
		delete(t.all, c)
		t.count--
	}
	mapped := c.mapped
	if mapped {
		c.mapped = false
		delete(t.conns, c.addr)
		t.gone = append(t.gone, c.addr)
		t.ngone.Store(int32(len(t.gone)))
	}
	t.mu.Unlock()
	if mapped {
		t.Wake()
	}
}

// connTo is the connection to peer to, dialed now if there is none; nil
// when the transport is closed or at MaxConns (the datagram is dropped).
func (t *Transport) connTo(to netip.AddrPort) *conn {
	if c := t.lastConn; c != nil && t.lastAddr == to && !c.dead.Load() {
		return c
	}
	t.mu.Lock()
	c := t.conns[to]
	if c == nil {
		if t.closed.Load() || t.count >= t.opts.MaxConns {
			t.mu.Unlock()
			t.stats.dropped.Add(1)
			return nil
		}
		c = newConn(t, to)
		c.dialed, c.mapped = true, true
		t.conns[to] = c
		t.count++
		if t.all == nil {
			t.all = make(map[*conn]struct{})
		}
		t.all[c] = struct{}{}
		t.wg.Add(1)
		go t.dialOut(c)
	}
	t.mu.Unlock()
	t.lastAddr, t.lastConn = to, c
	return c
}

// dialOut opens c's socket. A listening transport dials from its own
// listening port (shareListenPort), so the peer knows it by the address
// it listens on: datagrams it sends come from LocalAddr, as over UDP, and
// the peer's answers, and its own sessions to us, share this one
// connection. Where that port cannot be used (another platform, the
// 4-tuple still in TIME_WAIT, a dial to our own port) it dials from an
// ephemeral port; the peer then knows us by that address, and answers on
// this connection all the same.
func (t *Transport) dialOut(c *conn) {
	defer t.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), t.opts.DialTimeout)
	defer cancel()
	go func() { // Close ends a dial in progress
		select {
		case <-t.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	to := net.TCPAddrFromAddrPort(c.addr)
	var nc net.Conn
	var err error
	if t.bind != nil && c.addr.Port() != t.local.Port() {
		d := net.Dialer{LocalAddr: t.bind, Control: reuseControl}
		if nc, err = d.DialContext(ctx, "tcp", to.String()); err != nil && ctx.Err() == nil && localPortBusy(err) {
			t.stats.redial.Add(1)
			nc = nil
		}
	}
	if nc == nil && (err == nil || localPortBusy(err)) {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", to.String())
	}
	if err != nil {
		t.stats.dialFailed.Add(1)
		c.fail(err)
		return
	}
	t.stats.dialed.Add(1)
	c.setUp(nc.(*net.TCPConn))
}

// localPortBusy reports a dial that failed for its local port: the
// 4-tuple is taken (TIME_WAIT) or the port cannot be shared.
func localPortBusy(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EADDRINUSE)
}
