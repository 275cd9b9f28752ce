package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
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
	addr netip.AddrPort // the peer, as Receive reports it and Send names it (set by register for an accepted one)
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

	nonce   [nonceLen]byte // a dialed connection's claim secret (identity.go)
	knownAs netip.AddrPort // an accepted connection's: the address the peer dialed

	rbuf   []byte // frames read, the last one perhaps partial
	filled int    // bytes in rbuf

	connIO // the platform's part
}

func newConn(t *Transport, addr netip.AddrPort) *conn {
	c := &conn{t: t, addr: addr, gone: make(chan struct{})}
	c.initIO()
	return c
}

// firstBuf is the read buffer of a connection whose peer has not yet
// proven itself: room for a preface and a little more. It grows to what
// the peer's frames need once the connection carries them (growRead).
const firstBuf = 256

// setUp runs on the connection's own goroutine once it has a socket:
// our preface, the peer's (within DialTimeout), the check of an accepted
// connection's claim (identity.go), then the connection is the peer's and
// carries frames (startIO).
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
	deadline := time.Now().Add(t.opts.DialTimeout)
	_ = nc.SetDeadline(deadline)
	mine := preface[:]
	if c.dialed {
		mine = t.claimFor(c)
	}
	if _, err := nc.Write(mine); err != nil {
		c.fail(err)
		return
	}
	c.rbuf = make([]byte, firstBuf)
	h, filled, err := c.readHello(c.rbuf)
	if err == nil && h.kind == kindCheck && c.dialed {
		err = fmt.Errorf("%w: a check on a connection this side dialed", errBadPreface)
	}
	if err != nil {
		if errors.Is(err, errBadPreface) {
			t.stats.badPreface.Add(1)
			t.log.Warn("erpc tcp: connection cut off", "peer", nc.RemoteAddr().String(), "err", err)
		}
		c.fail(err)
		return
	}
	if h.kind == kindCheck {
		t.answerCheck(c, nc, h)
		return
	}
	key := c.addr
	if !c.dialed {
		c.knownAs = canonical(nc.LocalAddr().(*net.TCPAddr).AddrPort())
		if h.kind == kindClaim {
			claimed, ok := t.verifyClaim(nc, h, deadline)
			if ok {
				key = claimed
				t.stats.claimed.Add(1)
			} else {
				t.stats.claimFailed.Add(1)
			}
		}
	}
	_ = nc.SetDeadline(time.Time{})
	c.filled = filled
	if !t.register(c, key) {
		c.fail(nil)
		return
	}
	c.startIO()
}

// readHello reads the peer's preface into buf, checking each byte as it
// comes, so a peer that speaks something else is cut off on its first
// bytes however few it sends. It returns how many bytes past the preface
// buf holds (moved to its start).
func (c *conn) readHello(buf []byte) (hello, int, error) {
	filled := 0
	for {
		want := helloLen(buf, filled)
		if want > 0 && filled >= want {
			h := parseHello(buf[:want])
			return h, copy(buf, buf[want:filled]), nil
		}
		n, err := c.nc.Read(buf[filled:])
		filled += n
		if perr := checkHello(buf, filled); perr != nil {
			return hello{}, 0, perr
		}
		if err != nil && (helloLen(buf, filled) == 0 || filled < helloLen(buf, filled)) {
			return hello{}, 0, err
		}
	}
}

// growRead makes room in rbuf for the next read: room for the whole of
// the frame at its start, and more room (doubling, up to fullBuf) when
// the last read filled it.
func (c *conn) growRead(filledUp bool) {
	need := len(c.rbuf)
	if filledUp {
		need = min(2*len(c.rbuf), fullBuf)
	}
	if c.filled >= frameHead {
		if n := int(binary.BigEndian.Uint32(c.rbuf)); n <= MaxDatagram {
			need = max(need, frameHead+n)
		}
	}
	if need > len(c.rbuf) {
		b := make([]byte, need)
		copy(b, c.rbuf[:c.filled])
		c.rbuf = b
	}
}

// fullBuf is the largest read buffer: a largest frame and 64 KiB more.
const fullBuf = frameHead + MaxDatagram + 64<<10

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
