//go:build linux

package shm

import (
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestHostileSmallRingConnectorWedged: the connector chooses the ring size
// of a connection (Options.RingSize, down to 64 KiB), but the listener
// bounds what it sends by its own MaxDatagram (its own RingSize/16, 256
// KiB by default), not by the connection's ring: a producer refuses a
// record over half its ring (maxRecord), so a datagram of 40 KiB to a
// connector with a 64 KiB ring goes to the backlog and never leaves it,
// and every later datagram waits behind it (until the 32 MiB bound drops
// them). The peer is live and reading; the transport claims Reliable.
func TestHostileSmallRingConnectorWedged(t *testing.T) {
	big, small := make([]byte, 40<<10), []byte("after")
	tr, path := hostileListener(t, Options{}) // default ring: MaxDatagram 256 KiB
	c, err := Listen("", Options{RingSize: minRingSize})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Resolve(path); err != nil {
		t.Fatal(err)
	}
	waitConns(t, tr, 1)
	peer := tr.snap.Load().conns[0].peer()
	if err := tr.Send([]transport.Message{{To: peer, Head: big}, {To: peer, Head: small}}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := 0
	for end := time.Now().Add(2 * time.Second); got < 2 && time.Now().Before(end); {
		tr.Receive(func(netip.AddrPort, []byte) {}) // the listener's loop: moves the backlog
		if k, _ := c.Receive(func(netip.AddrPort, []byte) { got++ }); k == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if got != 2 {
		t.Fatalf("a live, reading connector with a %d KiB ring got %d of 2 datagrams (a %d KiB one, within the listener's MaxDatagram %d KiB, then a small one) in 2 s: backlogged %d",
			minRingSize>>10, got, len(big)>>10, tr.MaxDatagram()>>10, tr.Stats().Backlogged)
	}
}
