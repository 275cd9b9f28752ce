//go:build linux && !erpc_portable

package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// peerOf is the address the transport's socket is connected to, or an
// invalid one when it is not connected.
func peerOf(t *testing.T, tr *Transport) netip.AddrPort {
	t.Helper()
	var peer netip.AddrPort
	var err error
	tr.rc.Control(func(fd uintptr) {
		var sa unix.Sockaddr
		sa, err = unix.Getpeername(int(fd))
		switch a := sa.(type) {
		case *unix.SockaddrInet4:
			peer = netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
		case *unix.SockaddrInet6:
			peer = netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port))
		}
	})
	if err != nil && !errors.Is(err, unix.ENOTCONN) {
		t.Fatal(err)
	}
	return peer
}

func sendText(t *testing.T, from *Transport, to netip.AddrPort, texts ...string) {
	t.Helper()
	var msgs []transport.Message
	for _, s := range texts {
		msgs = append(msgs, transport.Message{To: to, Payload: []byte(s)})
	}
	if err := from.Send(msgs); err != nil {
		t.Fatal(err)
	}
}

// TestClientOnlyConnects: a client-only transport's socket is connected
// to its one peer from its first send (the kernel then drops what anyone
// else sends it, which is how the test knows the connection is real), and
// the first send to a second peer disconnects it, within one batch: the
// datagrams to the first peer built before the switch still arrive.
func TestClientOnlyConnects(t *testing.T) {
	for _, at := range []struct{ addr, network string }{{"127.0.0.1:0", ""}, {":0", "udp4"}} {
		t.Run(at.addr+"/"+at.network, func(t *testing.T) {
			c, err := Listen(at.addr, Options{ClientOnly: true, Network: at.network})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			srv1, srv2 := listenPair(t)

			sendText(t, c, srv1.LocalAddr(), "hello")
			if got := peerOf(t, c); got != srv1.LocalAddr() {
				t.Fatalf("after the first send the socket is connected to %v, want %v", got, srv1.LocalAddr())
			}
			if got := receiveN(t, srv1, 1); len(got) != 1 || string(got[0]) != "hello" {
				t.Fatalf("server 1 got %q", got)
			}
			sendText(t, srv2, c.LocalAddr(), "stranger") // dropped by the kernel: not the peer
			sendText(t, srv1, c.LocalAddr(), "reply")
			if got := receiveN(t, c, 1); len(got) != 1 || string(got[0]) != "reply" {
				t.Fatalf("client got %q, want only the peer's reply", got)
			}

			// One batch: the peer, then a second peer, then the peer.
			if err := c.Send([]transport.Message{
				{To: srv1.LocalAddr(), Payload: []byte("a")},
				{To: srv2.LocalAddr(), Payload: []byte("b")},
				{To: srv1.LocalAddr(), Payload: []byte("c")},
			}); err != nil {
				t.Fatal(err)
			}
			if got := peerOf(t, c); got.IsValid() {
				t.Fatalf("after a send to a second peer the socket is still connected to %v", got)
			}
			if got := receiveN(t, srv1, 2); fmt.Sprint(texts(got)) != "[a c]" {
				t.Fatalf("server 1 got %q, want a and c", got)
			}
			if got := receiveN(t, srv2, 1); fmt.Sprint(texts(got)) != "[b]" {
				t.Fatalf("server 2 got %q, want b", got)
			}
			sendText(t, srv2, c.LocalAddr(), "from 2")
			sendText(t, srv1, c.LocalAddr(), "from 1")
			if got := receiveN(t, c, 2); fmt.Sprint(texts(got)) != "[from 2 from 1]" {
				t.Fatalf("client got %q, want both servers' datagrams", got)
			}
			sendText(t, c, srv1.LocalAddr(), "again") // stays unconnected
			if got := peerOf(t, c); got.IsValid() {
				t.Fatalf("the socket reconnected to %v", got)
			}
		})
	}
}

// TestClientOnlyFamilies: a client-only socket of one family connects to
// its peer (the speed-up erpc.Dial keeps by opening one), an IPv6-only
// one reaching IPv6 alone; a dual-stack one never connects, whatever its
// peers (see TestDualStackClientOnlyHearsBothFamilies for why).
func TestClientOnlyFamilies(t *testing.T) {
	if !hasIPv6Loopback() {
		t.Skip("no IPv6 loopback (::1)")
	}
	v4peer, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer v4peer.Close()
	v6peer, err := Listen("[::1]:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer v6peer.Close()
	for _, c := range []struct {
		addr, network string
		peer          *Transport
		connects      bool
	}{
		{":0", "udp6", v6peer, true},
		{"[::1]:0", "", v6peer, true},
		{":0", "", v4peer, false},
		{":0", "", v6peer, false},
		{"0.0.0.0:0", "", v4peer, false},
		{"[::]:0", "", v6peer, false},
	} {
		tr, err := Listen(c.addr, Options{ClientOnly: true, Network: c.network})
		if err != nil {
			t.Fatal(err)
		}
		if c.network == "udp6" && (tr.Reaches(v4peer.LocalAddr().Addr()) || !tr.Reaches(v6peer.LocalAddr().Addr()) || tr.LocalAddr().Addr() != netip.IPv6Loopback()) {
			t.Errorf("an IPv6-only socket on %s: reaches IPv4 %v, IPv6 %v, local address %v; want false, true, ::1",
				c.addr, tr.Reaches(v4peer.LocalAddr().Addr()), tr.Reaches(v6peer.LocalAddr().Addr()), tr.LocalAddr())
		}
		sendText(t, tr, c.peer.LocalAddr(), "x")
		if got := receiveN(t, c.peer, 1); len(got) != 1 {
			t.Fatalf("%s/%s: the peer got %d datagrams, want 1", c.addr, c.network, len(got))
		}
		if got := peerOf(t, tr); got.IsValid() != c.connects {
			t.Errorf("client-only socket on %s/%s after a send to %v: connected to %v, want connected %v",
				c.addr, c.network, c.peer.LocalAddr(), got, c.connects)
		}
		tr.Close()
	}
}

// TestServingNeverConnects: without ClientOnly the socket stays open to
// every sender.
func TestServingNeverConnects(t *testing.T) {
	a, b := listenPair(t)
	sendText(t, a, b.LocalAddr(), "x")
	if got := peerOf(t, a); got.IsValid() {
		t.Fatalf("a serving transport connected its socket to %v", got)
	}
}

func texts(ds [][]byte) []string {
	var s []string
	for _, d := range ds {
		s = append(s, string(d))
	}
	return s
}
