//go:build linux

package testnet

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// wireOverhead is what an Ethernet frame adds to a UDP payload (Ethernet
// 14, IPv4 20, UDP 8): the bytes a shaper counts.
const wireOverhead = 42

type flowCount struct{ pkts, wire uint64 }

// sink counts the datagrams it receives, per source port.
type sink struct {
	conn *net.UDPConn
	mu   sync.Mutex
	all  flowCount
	per  map[uint16]flowCount
	done chan struct{}
}

func newSink(t *testing.T, ns string, addr netip.AddrPort) *sink {
	t.Helper()
	s := &sink{per: map[uint16]flowCount{}, done: make(chan struct{})}
	err := In(ns, func() (err error) {
		s.conn, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	setBuf(t, s.conn, unix.SO_RCVBUFFORCE)
	go func() {
		defer close(s.done)
		buf := make([]byte, 65536)
		for {
			n, from, err := s.conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			s.mu.Lock()
			c := s.per[from.Port()]
			c.pkts++
			c.wire += uint64(n + wireOverhead)
			s.per[from.Port()] = c
			s.all.pkts++
			s.all.wire += uint64(n + wireOverhead)
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { s.conn.Close(); <-s.done })
	return s
}

func (s *sink) snapshot() (flowCount, map[uint16]flowCount) {
	s.mu.Lock()
	defer s.mu.Unlock()
	per := make(map[uint16]flowCount, len(s.per))
	for k, v := range s.per {
		per[k] = v
	}
	return s.all, per
}

func setBuf(t *testing.T, c *net.UDPConn, opt int) {
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, 8<<20) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
}

// sender is a UDP socket opened in a namespace, sending paced datagrams.
type sender struct {
	conn *net.UDPConn
}

// newSender opens a socket in ns bound to laddr (":port" form: the
// unspecified address), connected to dst if connect is set.
func newSender(t *testing.T, ns string, laddr netip.AddrPort, dst netip.AddrPort, connect bool) *sender {
	t.Helper()
	var c *net.UDPConn
	err := In(ns, func() (err error) {
		if connect {
			c, err = net.DialUDP("udp4", net.UDPAddrFromAddrPort(laddr), net.UDPAddrFromAddrPort(dst))
		} else {
			c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(laddr))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &sender{conn: c}
}

// run sends payload-byte datagrams to dst (nil: the connected peer) at
// wireRate bits per second of Ethernet frames for d, and returns how many
// the kernel accepted. It paces in steps of about half a millisecond.
func (s *sender) run(dst netip.AddrPort, payload int, wireRate float64, d time.Duration) (int, error) {
	buf := make([]byte, payload)
	perPkt := float64((payload + wireOverhead) * 8)
	start := time.Now()
	sent := 0
	for {
		el := time.Since(start)
		if el >= d {
			return sent, nil
		}
		want := int(wireRate * el.Seconds() / perPkt)
		for ; sent < want; sent++ {
			var err error
			if dst.IsValid() {
				_, err = s.conn.WriteToUDPAddrPort(buf, dst)
			} else {
				_, err = s.conn.Write(buf)
			}
			if err != nil && !errors.Is(err, unix.ENOBUFS) {
				return sent, err
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
}

func mbit(wireBytes uint64, d time.Duration) float64 {
	return float64(wireBytes) * 8 / d.Seconds() / 1e6
}
