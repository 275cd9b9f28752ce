//go:build linux

package tcp_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// reusePort sets SO_REUSEADDR and SO_REUSEPORT before bind, as any
// program of the same user may (nginx's reuseport, Envoy, Go's
// go-reuseport...).
func reusePort(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}
	}); err != nil {
		return err
	}
	return serr
}

// TestReviewCoListenerOnPortInUse: promise 7, "listening on a port in use
// fails". The transport sets SO_REUSEPORT on its listening socket (to dial
// from that port), which lets any other socket of the same user that also
// asks for SO_REUSEPORT listen on the very same port: the bind succeeds and
// the kernel then spreads incoming connections between the two listeners,
// so a share of the peers that dial the endpoint's Target reach the other
// program instead. Without the option on erpc's listener the second
// program's bind fails with EADDRINUSE.
func TestReviewCoListenerOnPortInUse(t *testing.T) {
	a := listen(t, "127.0.0.1:0")
	lc := net.ListenConfig{Control: reusePort}
	other, err := lc.Listen(context.Background(), "tcp", a.LocalAddr().String())
	if err == nil {
		defer other.Close()
		stolen := make(chan struct{}, 64)
		go func() {
			for {
				c, err := other.Accept()
				if err != nil {
					return
				}
				stolen <- struct{}{}
				c.Close()
			}
		}()
		const dials = 32
		for range dials {
			c, err := net.Dial("tcp", a.LocalAddr().String())
			if err == nil {
				c.Close()
			}
		}
		time.Sleep(100 * time.Millisecond)
		t.Fatalf("a second program listened on the endpoint's port %v while the endpoint listens there; it took %d of %d connections dialed to the endpoint's Target",
			a.LocalAddr(), len(stolen), dials)
	}
}

// TestReviewSpoofedListeningPort: promise 6, "a listening endpoint is
// known to its peers by its LocalAddr". Because the endpoint's listening
// port carries SO_REUSEPORT, another local program of the same user can
// bind that port too, dial the endpoint's peer from it and send the
// preface: the peer then takes the impostor's connection for the endpoint
// (register drops the real one without a word), so everything the peer
// sends to the endpoint's LocalAddr goes to the impostor, and the real
// endpoint's connection is closed. b listens on all interfaces, as servers
// do, so the impostor reaches it at 127.0.0.2, a 4-tuple of its own.
func TestReviewSpoofedListeningPort(t *testing.T) {
	a, b := listen(t, "127.0.0.1:0"), listen(t, "0.0.0.0:0")
	if err := a.Send([]transport.Message{{To: b.LocalAddr(), Head: []byte("hello from a")}}); err != nil {
		t.Fatal(err)
	}
	if from := recvFrom(t, b); from != a.LocalAddr() {
		t.Fatalf("b heard a from %v", from)
	}
	// The impostor: a socket bound to a's listening address.
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(a.LocalAddr()), Control: reusePort}
	imp, err := d.Dial("tcp", netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 2}), b.LocalAddr().Port()).String())
	if err != nil {
		t.Logf("the impostor could not bind a's port: %v (held)", err)
		return
	}
	defer imp.Close()
	if _, err := imp.Write(goodPreface); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		imp.SetReadDeadline(time.Now().Add(5 * time.Second))
		var pre [10]byte
		if _, err := io.ReadFull(imp, pre[:]); err != nil {
			got <- nil
			return
		}
		var h [4]byte
		if _, err := io.ReadFull(imp, h[:]); err != nil {
			got <- nil
			return
		}
		buf := make([]byte, binary.BigEndian.Uint32(h[:]))
		io.ReadFull(imp, buf)
		got <- buf
	}()
	// Let b's loop run while the impostor's connection is set up.
	until(t, "b to take the impostor's connection", func() bool {
		b.Receive(func(netip.AddrPort, []byte) {})
		return b.Stats().Accepted >= 2
	})
	time.Sleep(50 * time.Millisecond)
	b.Receive(func(netip.AddrPort, []byte) {})
	if err := b.Send([]transport.Message{{To: a.LocalAddr(), Head: []byte("secret for a")}}); err != nil {
		t.Fatal(err)
	}
	var heardByA string
	var goneAtA []netip.AddrPort
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) && heardByA == "" {
		b.Receive(func(netip.AddrPort, []byte) {})
		a.Receive(func(_ netip.AddrPort, d []byte) { heardByA = string(d) })
		goneAtA = a.GonePeers(goneAtA)
		a.Wait(time.Now().Add(5 * time.Millisecond))
	}
	var impGot []byte
	select {
	case impGot = <-got:
	case <-time.After(3 * time.Second):
	}
	if heardByA != "secret for a" || impGot != nil {
		t.Fatalf("b's datagram to a's LocalAddr %v: a heard %q, the impostor that bound a's port heard %q; a was told b is gone: %v",
			a.LocalAddr(), heardByA, impGot, goneAtA)
	}
}
