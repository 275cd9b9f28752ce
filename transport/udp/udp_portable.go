//go:build !linux || erpc_portable

package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// Transport is a UDP socket. This portable version reads with a goroutine
// that blocks in the netpoller and copies each datagram into an arena that
// Receive takes whole. The arena is bounded: when it is full, the reader
// waits for Receive, and the kernel's socket buffer absorbs (or drops) the
// rest, as it would for a slow reader. So the memory a transport holds is
// two arenas and one read buffer, whatever arrives.
type Transport struct {
	packetSize int                  // Options.PacketSize, resolved
	paths      []struct{ port int } // never any: several paths need the Linux transport
	conn       *net.UDPConn
	local      netip.AddrPort
	bound      netip.Addr // the address the socket is bound to (Reaches)
	network    string     // Options.Network: "udp", "udp4" or "udp6" (Reaches)

	mu      sync.Mutex
	space   sync.Cond  // Receive took the arena
	arena   []byte     // datagrams arrived, back to back
	queue   []datagram // where each is in arena
	spare   []byte     // the other arena, for the next swap
	spareQ  []datagram
	err     error // reader's terminal error
	closed  bool
	notify  chan struct{}
	timer   *time.Timer
	scratch []byte
}

// arenaBytes is the size of one arena: datagrams beyond it wait in the
// kernel's socket buffer until the loop takes the arena.
const arenaBytes = 1 << 20

type datagram struct {
	from netip.AddrPort
	off  int
	n    int
}

func (t *Transport) init(Options) error {
	t.notify = make(chan struct{}, 1)
	t.timer = time.NewTimer(time.Hour)
	t.timer.Stop()
	t.space.L = &t.mu
	// Both arenas at their full size from the start: grown by append,
	// an arena's capacity would be rounded past the bound. read fills one
	// to at most arenaBytes (a datagram that would pass it waits, unless
	// the arena is empty, and MaxDatagram < arenaBytes).
	t.arena = make([]byte, 0, arenaBytes)
	t.spare = make([]byte, 0, arenaBytes)
	go t.read()
	return nil
}

func setBuffers(conn *net.UDPConn, size int) {
	_ = conn.SetReadBuffer(size)
	_ = conn.SetWriteBuffer(size)
}

// read moves datagrams from the socket to the arena until the socket
// closes.
func (t *Transport) read() {
	buf := make([]byte, MaxDatagram)
	for {
		n, from, err := t.conn.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			t.mu.Lock()
			t.err = err
			t.space.Broadcast()
			t.mu.Unlock()
			t.Wake()
			return
		}
		if err != nil {
			// An ICMP error reported on the socket (port unreachable):
			// the network dropped something; keep reading.
			continue
		}
		t.mu.Lock()
		for len(t.arena)+n > arenaBytes && len(t.queue) > 0 && !t.closed {
			t.space.Wait()
		}
		if t.closed {
			t.mu.Unlock()
			return
		}
		t.queue = append(t.queue, datagram{from: canonical(from), off: len(t.arena), n: n})
		t.arena = append(t.arena, buf[:n]...)
		t.mu.Unlock()
		t.Wake()
	}
}

// Receive passes the queued datagrams to fn.
func (t *Transport) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return 0, transport.ErrClosed
	}
	arena, queue := t.arena, t.queue
	t.arena, t.queue = t.spare[:0], t.spareQ[:0]
	t.space.Broadcast()
	t.mu.Unlock()
	for _, d := range queue {
		fn(d.from, arena[d.off:d.off+d.n:d.off+d.n])
	}
	t.mu.Lock()
	t.spare, t.spareQ = arena[:0], queue[:0]
	t.mu.Unlock()
	return len(queue), nil
}

// held is the memory the transport keeps for arrived datagrams.
func (t *Transport) held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return cap(t.arena) + cap(t.spare)
}

// Send writes each datagram with one system call.
func (t *Transport) Send(msgs []transport.Message) error {
	var err error
	for i := range msgs {
		m := &msgs[i]
		if m.Len() > MaxDatagram {
			err = transport.ErrTooLarge
			continue
		}
		b := m.Head
		if len(m.Payload) > 0 { // only the loop sends: scratch needs no lock
			b = append(append(t.scratch[:0], m.Head...), m.Payload...)
			t.scratch = b
		}
		if _, werr := t.conn.WriteToUDPAddrPort(b, m.To); werr != nil {
			if errors.Is(werr, net.ErrClosed) {
				return transport.ErrClosed
			}
			// Anything else (no route, a full buffer, ICMP errors) is the
			// network dropping the datagram.
		}
	}
	return err
}

// Wait blocks until a datagram is queued, the deadline passes, or Wake.
func (t *Transport) Wait(deadline time.Time) error {
	t.mu.Lock()
	ready, closed, rerr := len(t.queue) > 0, t.closed, t.err
	t.mu.Unlock()
	switch {
	case closed:
		return transport.ErrClosed
	case rerr != nil:
		return rerr
	case ready:
		return nil
	}
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return nil
		}
		t.timer.Reset(d)
		defer t.timer.Stop()
	}
	select {
	case <-t.notify:
	case <-t.timer.C:
	}
	t.mu.Lock()
	closed = t.closed
	t.mu.Unlock()
	if closed {
		return transport.ErrClosed
	}
	return nil
}

// Wake ends a current or next Wait.
func (t *Transport) Wake() {
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// Close closes the socket.
func (t *Transport) Close() error {
	t.mu.Lock()
	already := t.closed
	t.closed = true
	t.space.Broadcast()
	t.mu.Unlock()
	if already {
		return nil
	}
	err := t.conn.Close()
	t.Wake()
	return err
}

// addPath is not supported by the portable transport.
func (t *Transport) addPath(c *net.UDPConn) error {
	return fmt.Errorf("%w: several paths need the Linux transport", ErrNotSupported)
}
