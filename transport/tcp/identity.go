package tcp

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// Identity. A peer that listens is known by the address it listens on
// (its LocalAddr), as over UDP, though it dials from an ephemeral port
// (no SO_REUSEPORT: the listening port is this transport's alone). Its
// preface is a claim: the port it listens on (at the IP the connection
// comes from) and a nonce, a secret of that one connection. The acceptor
// believes the claim only once it is proven: it dials the claimed address
// (a check connection, from the IP the claimant dialed) and asks whether
// the transport listening there opened a connection to it with that
// nonce. Only the process that listens on the claimed port can say yes,
// and only the acceptor and the claimant know the nonce (TCP on loopback
// or a LAN cannot be read by another local user), so another program
// that claims an endpoint's port is known by its own ephemeral address.
// A claim that does not check out (a NAT in between, a liar) costs the
// peer nothing but the name: its datagrams come from the connection's
// source address and the answers go back on the connection.

// Preface kinds: the byte after the version.
const (
	kindPlain = '\n' // the plain preface: an acceptor, or a dialer that does not listen
	kindClaim = 'C'  // a dialer that listens: its port and a nonce follow
	kindCheck = 'K'  // a check connection: the checker's port and the nonce to check
)

const (
	nonceLen = 16
	claimLen = prefaceLen + 2 + nonceLen + 1 // preface, port, nonce, newline
	checkYes = 'Y'                           // a check's answer, after the plain preface
)

// hello is a peer's preface, read.
type hello struct {
	kind  byte
	port  uint16
	nonce [nonceLen]byte
}

// claimPreface is the preface of a dialer that listens on port.
func claimPreface(kind byte, port uint16, nonce [nonceLen]byte) [claimLen]byte {
	var b [claimLen]byte
	copy(b[:], preface[:prefaceLen-1])
	b[prefaceLen-1] = kind
	binary.BigEndian.PutUint16(b[prefaceLen:], port)
	copy(b[prefaceLen+2:], nonce[:])
	b[claimLen-1] = '\n'
	return b
}

// helloLen is how long the preface starting with p[:n] is, once its kind
// byte is known (0 before).
func helloLen(p []byte, n int) int {
	if n < prefaceLen {
		return 0
	}
	if p[prefaceLen-1] == kindPlain {
		return prefaceLen
	}
	return claimLen
}

// checkHello says why p, the first n bytes of a peer's preface, is not a
// preface (nil while it may still be one).
func checkHello(p []byte, n int) error {
	m := min(n, prefaceLen-1)
	if string(p[:m]) != string(preface[:m]) {
		if n < prefaceLen {
			return fmt.Errorf("%w: its first bytes are %q", errBadPreface, p[:n])
		}
		return checkPreface(p[:prefaceLen])
	}
	if n < prefaceLen {
		return nil
	}
	switch p[prefaceLen-1] {
	case kindPlain:
		return nil
	case kindClaim, kindCheck:
		if n >= claimLen && p[claimLen-1] != '\n' {
			return fmt.Errorf("%w: a claim not ended by a newline", errBadPreface)
		}
		return nil
	}
	return checkPreface(p[:prefaceLen])
}

// parseHello reads the preface at the start of p (checked whole).
func parseHello(p []byte) hello {
	h := hello{kind: p[prefaceLen-1]}
	if h.kind != kindPlain {
		h.port = binary.BigEndian.Uint16(p[prefaceLen:])
		copy(h.nonce[:], p[prefaceLen+2:])
	}
	return h
}

// newNonce is a fresh secret for one connection's claim.
func newNonce() (n [nonceLen]byte) {
	_, _ = rand.Read(n[:])
	return n
}

// claimFor puts c's nonce in the claims a check may ask about, and
// returns c's preface: a claim if this transport listens.
func (t *Transport) claimFor(c *conn) []byte {
	if t.ln == nil {
		return preface[:]
	}
	c.nonce = newNonce()
	t.mu.Lock()
	if t.claims == nil {
		t.claims = make(map[[nonceLen]byte]*conn)
	}
	t.claims[c.nonce] = c
	t.mu.Unlock()
	p := claimPreface(kindClaim, t.local.Port(), c.nonce)
	return p[:]
}

// answerCheck answers a check connection: yes if the nonce is that of a
// live connection this transport dialed to the checker (its claimed
// listening port, at the IP the check comes from). The check connection
// stops counting against MaxConns before the answer goes, so the checker
// never sees it counted once it has its answer.
func (t *Transport) answerCheck(c *conn, nc *net.TCPConn, h hello) {
	remote := canonical(nc.RemoteAddr().(*net.TCPAddr).AddrPort())
	checker := netip.AddrPortFrom(remote.Addr(), h.port)
	t.mu.Lock()
	d := t.claims[h.nonce]
	ok := d != nil && d.addr == checker && !d.dead.Load()
	t.mu.Unlock()
	t.unadmit(c)
	if ok {
		_, _ = nc.Write([]byte{checkYes})
	}
	c.fail(nil)
}

// verifyClaim checks an accepted connection's claim (see Identity): it
// dials the claimed address from the IP the claimant dialed, and asks.
func (t *Transport) verifyClaim(nc *net.TCPConn, h hello, deadline time.Time) (netip.AddrPort, bool) {
	remote := canonical(nc.RemoteAddr().(*net.TCPAddr).AddrPort())
	claimed := netip.AddrPortFrom(remote.Addr(), h.port)
	local := canonical(nc.LocalAddr().(*net.TCPAddr).AddrPort())
	ctx, cancel := context.WithDeadline(t.ctx, deadline)
	defer cancel()
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(local.Addr(), 0))}
	cc, err := d.DialContext(ctx, "tcp", claimed.String())
	if err != nil {
		return claimed, false
	}
	defer cc.Close()
	stop := context.AfterFunc(ctx, func() { cc.Close() })
	defer stop()
	p := claimPreface(kindCheck, t.local.Port(), h.nonce)
	if _, err := cc.Write(p[:]); err != nil {
		return claimed, false
	}
	var answer [prefaceLen + 1]byte
	if _, err := io.ReadFull(cc, answer[:]); err != nil {
		return claimed, false
	}
	return claimed, [prefaceLen]byte(answer[:prefaceLen]) == preface && answer[prefaceLen] == checkYes
}
