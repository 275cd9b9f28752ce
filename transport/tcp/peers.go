package tcp

import (
	"context"
	"net"
	"net/netip"
	"time"
)

// accept takes the connections peers open. A connection counts against
// MaxConns from here; it is known by the peer's address (for a peer that
// listens too, its listening address, once proven: identity.go) once its
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

// unadmit stops counting c against MaxConns (a check connection, which
// is answered and closed).
func (t *Transport) unadmit(c *conn) {
	t.mu.Lock()
	if _, ok := t.all[c]; ok {
		delete(t.all, c)
		t.count--
	}
	t.mu.Unlock()
}

// register makes a connection, its preface checked, carry its peer's
// datagrams, which Receive reports from key (an accepted connection's
// proven claim, else its source address; a dialed one's, the address
// dialed). A dialed connection is its peer's from the start (connTo):
// false if it no longer is. An accepted one becomes the one Send uses
// for key unless key has a live one already; a second connection never
// closes the first:
//   - key has a connection this side dialed, and the peer knows this side
//     by the same address on both (the two dialed each other at once):
//     the accepted one carries the peer's datagrams as key's, each side
//     sending on the one it dialed;
//   - otherwise (the peer reached this side at another of its addresses,
//     or a connection from the same address is still open): the accepted
//     one is known by its own source address, so answers to what comes
//     on it go back on it, to the address the peer dialed.
//
// An older accepted connection from the same source address (its 4-tuple
// taken again, so the kernel closed it, though this side has not yet read
// its end) is dropped without reporting the peer gone: the new one's
// first datagrams may already be with the engine.
func (t *Transport) register(c *conn, key netip.AddrPort) bool {
	t.mu.Lock()
	if c.dialed || t.closed.Load() {
		t.mu.Unlock()
		return c.dialed && c.mapped
	}
	if old := t.conns[key]; old != nil && key != c.addr {
		if old.dialed && t.knownAsBy(old.addr) == c.knownAs {
			c.addr = key
			t.mu.Unlock()
			return true
		}
		key = c.addr // its source address
	}
	old := t.conns[key]
	if old != nil && old.dialed { // this side dialed the peer's ephemeral port?
		t.mu.Unlock()
		return true
	}
	if old != nil {
		old.mapped = false
	}
	c.addr = key
	t.conns[key] = c
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
	if c.dialed && t.claims[c.nonce] == c {
		delete(t.claims, c.nonce)
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

// dialOut opens c's socket, from an ephemeral port (of the listening
// IP, if the transport listens on one address of the peer's family, so
// the peer sees the address this side claims: identity.go).
func (t *Transport) dialOut(c *conn) {
	defer t.wg.Done()
	ctx, cancel := context.WithTimeout(t.ctx, t.opts.DialTimeout)
	defer cancel()
	var d net.Dialer
	if ip := t.bindIP; ip.IsValid() && ip.Is4() == c.addr.Addr().Is4() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, 0))
	}
	nc, err := d.DialContext(ctx, "tcp", c.addr.String())
	if err != nil {
		t.stats.dialFailed.Add(1)
		c.fail(err)
		return
	}
	t.stats.dialed.Add(1)
	c.setUp(nc.(*net.TCPConn))
}

// knownAsBy is the address a peer at to knows this side by on a
// connection this side dials: the listening port, at the IP the dial
// comes from (the listening IP, or the one the route to the peer takes,
// which a connected UDP socket reports without sending anything).
func (t *Transport) knownAsBy(to netip.AddrPort) netip.AddrPort {
	if ip := t.bindIP; ip.IsValid() && ip.Is4() == to.Addr().Is4() {
		return netip.AddrPortFrom(ip, t.local.Port())
	}
	uc, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		return netip.AddrPort{}
	}
	defer uc.Close()
	return netip.AddrPortFrom(canonical(uc.LocalAddr().(*net.UDPAddr).AddrPort()).Addr(), t.local.Port())
}
