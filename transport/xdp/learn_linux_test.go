//go:build linux

package xdp

import (
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestLearnPeerMAC: a peer on the link whose MAC changes (a replaced host
// keeping its IP) is reached again as soon as it sends: the transport
// takes the source MAC of its valid frames, without waiting for the
// neighbour table. Five rounds, each with a new MAC for B: B sends first,
// A's Receive sees it, and A's answer must arrive at once, every round
// (the resolver's 15 s check cannot have run in the time).
func TestLearnPeerMAC(t *testing.T) {
	p := newVethPair(t)
	a := listenXDP(t, p, p.A, p.AddrA, Options{})
	b := listenUDP(t, p.B, p.AddrB)
	ping := func(tr transport.Transport, to transport.Transport, s string) int {
		if err := tr.Send([]transport.Message{{To: to.LocalAddr(), Payload: []byte(s)}}); err != nil {
			t.Fatal(err)
		}
		return len(rcollect(t, to, 1, time.Second))
	}
	if ping(a, b, "first") != 1 {
		t.Fatal("the first datagram from A was lost")
	}
	for round, mac := range []string{"02:00:00:00:be:01", "02:00:00:00:be:02", "02:00:00:00:be:03", "02:00:00:00:be:04", "02:00:00:00:be:05"} {
		sh(t, "ip", "-n", p.B, "link", "set", "dev", p.ifname, "address", mac)
		if ping(b, a, "from b") != 1 {
			t.Fatalf("round %d: B's datagram did not reach A", round)
		}
		if ping(a, b, "answer") != 1 {
			t.Fatalf("round %d: A's answer did not reach B at its new MAC %s: stats %+v", round, mac, a.Stats())
		}
	}
}
