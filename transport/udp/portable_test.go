//go:build !linux || erpc_portable

package udp

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestPortableReaderBounded: a flood of datagrams that the loop does not
// take costs the portable transport at most its two arenas; the reader
// waits, and everything it took is delivered intact once the loop reads.
func TestPortableReaderBounded(t *testing.T) {
	tr, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(tr.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, 60000)
	for i := range 400 { // 24 MB, 12 times an arena
		msg[0] = byte(i)
		c.Write(msg)
	}
	time.Sleep(200 * time.Millisecond) // the reader fills what it may
	if h := tr.held(); h > 2*arenaBytes+MaxDatagram {
		t.Fatalf("the transport holds %d bytes for unread datagrams, over its bound %d", h, 2*arenaBytes+MaxDatagram)
	}
	got := 0
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n, err := tr.Receive(func(_ netip.AddrPort, d []byte) {
			if len(d) != len(msg) {
				t.Fatalf("datagram of %d bytes, sent %d", len(d), len(msg))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		got += n
		if n == 0 {
			tr.Wait(time.Now().Add(20 * time.Millisecond))
		}
		if got > 3*arenaBytes/len(msg) { // more than the arenas held: the reader resumed
			break
		}
	}
	if got <= arenaBytes/len(msg) {
		t.Fatalf("received %d datagrams: the reader did not resume after the loop read", got)
	}
	if h := tr.held(); h > 2*arenaBytes+MaxDatagram {
		t.Fatalf("the transport holds %d bytes, over its bound", h)
	}
}
