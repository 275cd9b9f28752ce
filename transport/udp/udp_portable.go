//go:build !linux || erpc_portable

package udp

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// Transport is a UDP socket. This portable version reads with a goroutine
// that blocks in the netpoller and queues datagrams for Receive.
type Transport struct {
	packetSize int // Options.PacketSize, resolved
	conn       *net.UDPConn
	local      netip.AddrPort

	mu      sync.Mutex
	queue   []datagram // arrived, not yet received
	free    [][]byte
	spare   []datagram
	err     error // reader's terminal error
	closed  bool
	notify  chan struct{}
	timer   *time.Timer
	scratch []byte
}

type datagram struct {
	from netip.AddrPort
	data []byte
}

func (t *Transport) init() error {
	t.notify = make(chan struct{}, 1)
	t.timer = time.NewTimer(time.Hour)
	t.timer.Stop()
	go t.read()
	return nil
}

func setBuffers(conn *net.UDPConn, size int) {
	_ = conn.SetReadBuffer(size)
	_ = conn.SetWriteBuffer(size)
}

// read moves datagrams from the socket to the queue until the socket closes.
func (t *Transport) read() {
	for {
		t.mu.Lock()
		var buf []byte
		if k := len(t.free); k > 0 {
			buf, t.free = t.free[k-1], t.free[:k-1]
		}
		t.mu.Unlock()
		if buf == nil {
			buf = make([]byte, MaxDatagram)
		}
		n, from, err := t.conn.ReadFromUDPAddrPort(buf[:MaxDatagram])
		t.mu.Lock()
		switch {
		case err == nil:
			t.queue = append(t.queue, datagram{canonical(from), buf[:n]})
		case errors.Is(err, net.ErrClosed):
			t.err = err
			t.mu.Unlock()
			t.Wake()
			return
		default:
			// An ICMP error reported on the socket (port unreachable):
			// the network dropped something; keep reading.
			t.free = append(t.free, buf)
		}
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
	got := t.queue
	t.queue = t.spare[:0]
	t.mu.Unlock()
	for _, d := range got {
		fn(d.from, d.data)
	}
	t.mu.Lock()
	for i := range got {
		t.free = append(t.free, got[i].data[:cap(got[i].data)])
		got[i] = datagram{}
	}
	t.spare = got[:0]
	t.mu.Unlock()
	return len(got), nil
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
	t.mu.Unlock()
	if already {
		return nil
	}
	err := t.conn.Close()
	t.Wake()
	return err
}
