package udp

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

func hasIPv6Loopback() bool {
	c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// TestResolveUnmaps: Resolve gives an IPv4 address in the form Receive
// reports IPv4 peers in, never IPv4-mapped, for a mapped literal and for
// a name (whose 16-byte net.IP would otherwise come back mapped).
func TestResolveUnmaps(t *testing.T) {
	tr, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, addr := range []string{"[::ffff:127.0.0.1]:7", "127.0.0.1:7", "localhost:7"} {
		a, err := tr.Resolve(addr)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", addr, err)
		}
		if a.Addr().Is4In6() || a.Port() != 7 || (addr != "localhost:7" && a != netip.MustParseAddrPort("127.0.0.1:7")) {
			t.Errorf("Resolve(%q) = %v, want a plain address (127.0.0.1:7 for the literals)", addr, a)
		}
	}
}

// TestReaches: which families a socket can send to follows what it is
// bound to.
func TestReaches(t *testing.T) {
	v4, mapped, v6 := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::ffff:127.0.0.1"), netip.MustParseAddr("::1")
	cases := []struct {
		listen   string
		v4, v6   bool
		needsIP6 bool
	}{
		{"127.0.0.1:0", true, false, false},
		{":0", true, true, false},
		{"0.0.0.0:0", true, true, false}, // Go opens the IPv4 wildcard dual-stack
		{"[::]:0", true, true, true},
		{"[::1]:0", false, true, true},
	}
	for _, c := range cases {
		if c.needsIP6 && !hasIPv6Loopback() {
			t.Logf("%s: skipped, no IPv6 loopback", c.listen)
			continue
		}
		if c.listen != "127.0.0.1:0" && !hasIPv6Loopback() {
			c.v6 = false // the wildcard is IPv4-only without IPv6
		}
		tr, err := Listen(c.listen, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Reaches(v4) != c.v4 || tr.Reaches(mapped) != c.v4 || tr.Reaches(v6) != c.v6 {
			t.Errorf("bound to %s: reaches 127.0.0.1 %v, ::ffff:127.0.0.1 %v, ::1 %v; want %v, %v, %v",
				c.listen, tr.Reaches(v4), tr.Reaches(mapped), tr.Reaches(v6), c.v4, c.v4, c.v6)
		}
		tr.Close()
	}
}

// TestDualStackTalksToIPv4: a dual-stack socket sends to an IPv4 peer
// given in plain form (mapping it itself), and reports the peer's
// datagrams as coming from that same plain address, connected
// (ClientOnly) or not; the IPv4 peer sees it at a plain IPv4 address too.
func TestDualStackTalksToIPv4(t *testing.T) {
	if !hasIPv6Loopback() {
		t.Skip("no IPv6 loopback (::1): this host has no dual-stack sockets")
	}
	for _, clientOnly := range []bool{false, true} {
		dual, err := Listen("[::]:0", Options{ClientOnly: clientOnly})
		if err != nil {
			t.Fatal(err)
		}
		peer, err := Listen("127.0.0.1:0", Options{})
		if err != nil {
			t.Fatal(err)
		}
		for round := range 3 {
			if err := dual.Send([]transport.Message{{To: peer.LocalAddr(), Head: []byte("ping")}}); err != nil {
				t.Fatal(err)
			}
			from := receiveOne(t, peer)
			if !from.Addr().Is4() || from.Port() != dual.LocalAddr().Port() {
				t.Fatalf("clientOnly %v round %d: the IPv4 peer got the datagram from %v", clientOnly, round, from)
			}
			if err := peer.Send([]transport.Message{{To: from, Head: []byte("pong")}}); err != nil {
				t.Fatal(err)
			}
			if back := receiveOne(t, dual); back != peer.LocalAddr() {
				t.Fatalf("clientOnly %v round %d: the dual-stack socket got the answer from %v, want %v (plain IPv4)",
					clientOnly, round, back, peer.LocalAddr())
			}
		}
		dual.Close()
		peer.Close()
	}
}

// receiveOne waits up to 5 s for a datagram on tr and returns its source.
func receiveOne(t *testing.T, tr *Transport) netip.AddrPort {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var from netip.AddrPort
		n, err := tr.Receive(func(f netip.AddrPort, _ []byte) { from = f })
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return from
		}
		_ = tr.Wait(time.Now().Add(50 * time.Millisecond))
	}
	t.Fatal("no datagram within 5 s")
	return netip.AddrPort{}
}

// TestDualStackClientOnlyHearsBothFamilies: a dual-stack client-only
// socket (on ":0", "0.0.0.0:0" or "[::]:0", all dual-stack in Go) that
// talks to IPv4 and IPv6 peers in turn hears every answer: on Linux
// (6.18) a dual-stack socket connected to an IPv4 peer and disconnected
// hears no IPv6 peer, so Listen never lets one connect.
func TestDualStackClientOnlyHearsBothFamilies(t *testing.T) {
	if !hasIPv6Loopback() {
		t.Skip("no IPv6 loopback (::1)")
	}
	var peers []*Transport
	for _, at := range []string{"127.0.0.1:0", "[::1]:0"} {
		peer, err := Listen(at, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		peers = append(peers, peer)
	}
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		cli, err := Listen(addr, Options{ClientOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		answered := 0
		for _, peer := range []*Transport{peers[0], peers[1], peers[0], peers[1]} {
			if err := cli.Send([]transport.Message{{To: peer.LocalAddr(), Head: []byte("ping")}}); err != nil {
				t.Fatal(err)
			}
			from := receiveOne(t, peer)
			if err := peer.Send([]transport.Message{{To: from, Head: []byte("pong")}}); err != nil {
				t.Fatal(err)
			}
			if back := receiveOne(t, cli); back != peer.LocalAddr() {
				t.Errorf("client on %s, after %d answers: the answer of %v came from %v", addr, answered, peer.LocalAddr(), back)
				break
			}
			answered++
		}
		cli.Close()
	}
}
