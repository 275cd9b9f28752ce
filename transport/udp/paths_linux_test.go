//go:build linux && !erpc_portable

package udp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestPaths: a transport with three paths sends each datagram from the
// port of its path; replies to any of the ports come back through Receive,
// and a reply to a path's port wakes a Wait (which parks on all of them).
func TestPaths(t *testing.T) {
	a, err := Listen("127.0.0.1:0", Options{Paths: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Paths() != 3 || b.Paths() != 1 {
		t.Fatalf("paths: %d and %d", a.Paths(), b.Paths())
	}
	ports := map[uint16]bool{}
	for p := range 3 {
		ports[uint16(a.PathPort(p))] = true
	}
	if len(ports) != 3 {
		t.Fatalf("path ports %v are not three", ports)
	}
	var msgs []transport.Message
	for p := range 3 {
		msgs = append(msgs, transport.Message{To: b.LocalAddr(), Head: []byte{byte(p)}, Path: uint8(p)})
	}
	if err := a.Send(msgs); err != nil {
		t.Fatal(err)
	}
	froms := map[netip.AddrPort]byte{}
	deadline := time.Now().Add(2 * time.Second)
	for len(froms) < 3 && time.Now().Before(deadline) {
		b.Wait(time.Now().Add(10 * time.Millisecond))
		b.Receive(func(from netip.AddrPort, d []byte) { froms[from] = d[0] })
	}
	for from, p := range froms {
		if int(from.Port()) != a.PathPort(int(p)) {
			t.Fatalf("path %d's datagram came from port %d, want %d", p, from.Port(), a.PathPort(int(p)))
		}
	}
	if len(froms) != 3 {
		t.Fatalf("%d of 3 datagrams arrived", len(froms))
	}
	// Replies to each port; one to a path port alone must end a Wait.
	for from := range froms {
		done := make(chan bool, 1)
		go func() { done <- a.Wait(time.Now().Add(2*time.Second)) == nil }()
		time.Sleep(20 * time.Millisecond) // a is parked
		start := time.Now()
		b.Send([]transport.Message{{To: from, Head: []byte("reply")}})
		<-done
		if d := time.Since(start); d > time.Second {
			t.Fatalf("a reply to port %d did not wake Wait (%v)", from.Port(), d)
		}
		got := 0
		for got == 0 && time.Now().Before(deadline) {
			n, _ := a.Receive(func(_ netip.AddrPort, d []byte) {
				if string(d) != "reply" {
					t.Errorf("got %q", d)
				}
			})
			got += n
		}
		if got != 1 {
			t.Fatalf("received %d replies on port %d", got, from.Port())
		}
	}
}
