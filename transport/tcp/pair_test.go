package tcp_test

import (
	"net/netip"
	"sync"
	"testing"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/tcp"
)

// recvFrom waits for one datagram on tr and returns its sender.
func recvFrom(t *testing.T, tr *tcp.Transport) netip.AddrPort {
	t.Helper()
	var from netip.AddrPort
	until(t, "a datagram", func() bool {
		n, _ := tr.Receive(func(f netip.AddrPort, _ []byte) { from = f })
		return n > 0
	})
	return from
}

// TestOneConnectionPerPair: a listening transport's preface claims its
// listening port, and once the claim is proven its peer knows it by its
// LocalAddr and answers on the connection it came by: one connection
// between the two, whichever sends first (the check connection is gone by
// the time the first datagram is delivered). Where both dial at once,
// every datagram still arrives (TestReviewMutualDialFrom checks the ports).
func TestOneConnectionPerPair(t *testing.T) {
	a, b := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
	a.Send([]transport.Message{{To: b.LocalAddr(), Head: []byte("ab")}})
	if from := recvFrom(t, b); from != a.LocalAddr() {
		t.Fatalf("b heard a from %v, want a's LocalAddr %v", from, a.LocalAddr())
	}
	b.Send([]transport.Message{{To: a.LocalAddr(), Head: []byte("ba")}})
	if from := recvFrom(t, a); from != b.LocalAddr() {
		t.Fatalf("a heard b from %v, want %v", from, b.LocalAddr())
	}
	if sa, sb := a.Stats(), b.Stats(); sa.Dialed != 1 || sb.Dialed != 0 || sa.Conns != 1 || sb.Conns != 1 {
		t.Fatalf("a %+v, b %+v: want one connection, dialed by a", sa, sb)
	}

	for range 20 { // both at once
		c, d := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
		var wg sync.WaitGroup
		wg.Go(func() { c.Send([]transport.Message{{To: d.LocalAddr(), Head: []byte("cd")}}) })
		wg.Go(func() { d.Send([]transport.Message{{To: c.LocalAddr(), Head: []byte("dc")}}) })
		wg.Wait()
		if from := recvFrom(t, d); from.Addr() != c.LocalAddr().Addr() {
			t.Fatalf("d heard c from %v", from)
		}
		if from := recvFrom(t, c); from.Addr() != d.LocalAddr().Addr() {
			t.Fatalf("c heard d from %v", from)
		}
		c.Close()
		d.Close()
	}
}
