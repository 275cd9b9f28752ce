//go:build linux && !erpc_portable

package udp

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestPoll: a poll of an empty socket makes its receives, calling idle
// between two, and finds nothing; idle ends it early; a datagram it finds
// is kept, reported again by the next poll without a receive, and handed
// over by the next Receive, first and once, before the ones behind it.
func TestPoll(t *testing.T) {
	a, b := listenPair(t)
	var _ transport.SyscallPoller = b
	idles := 0
	idle := func() bool { idles++; return false }
	before := b.rx.ones
	if b.Poll(64, idle) {
		t.Fatal("a poll of an empty socket found work")
	}
	if got := b.rx.ones - before; got != 0 {
		t.Fatalf("an empty poll received %d datagrams", got)
	}
	if idles != pollChecksMax-1 {
		t.Fatalf("idle called %d times, want %d (between %d checks)", idles, pollChecksMax-1, pollChecksMax)
	}
	idles = 0
	if b.Poll(64, func() bool { idles++; return true }) || idles != 1 {
		t.Fatalf("idle returning true did not end the poll after one check (idle called %d times)", idles)
	}

	for i := range 3 {
		if err := a.Send([]transport.Message{{To: b.LocalAddr(), Head: []byte{byte(i)}, Payload: []byte("dgram")}}); err != nil {
			t.Fatal(err)
		}
	}
	end := time.Now().Add(5 * time.Second)
	for !b.Poll(64, func() bool { return false }) {
		if time.Now().After(end) {
			t.Fatal("no poll found the datagrams sent")
		}
	}
	got := b.rx.ones
	if !b.Poll(64, idle) || b.rx.ones != got {
		t.Fatal("a poll with a datagram kept did not report it at once")
	}
	var order []byte
	fn := func(from netip.AddrPort, d []byte) {
		if from != a.LocalAddr() || !bytes.Equal(d[1:], []byte("dgram")) {
			t.Errorf("datagram %q from %v", d, from)
		}
		order = append(order, d[0])
	}
	if n, err := b.Receive(fn); n != 1 || err != nil {
		t.Fatalf("Receive after the poll: %d datagrams, %v; want the kept one", n, err)
	}
	for len(order) < 3 && time.Now().Before(end) {
		if _, err := b.Receive(fn); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(order, []byte{0, 1, 2}) {
		t.Fatalf("datagrams in order %v, want [0 1 2]", order)
	}
	if b.Poll(64, func() bool { return false }) {
		t.Fatal("a poll after the datagrams were taken found work")
	}
}

// TestPollClosed: a poll of a closed transport reports work, so that the
// loop's next Receive sees the close.
func TestPollClosed(t *testing.T) {
	tr, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	if !tr.Poll(8, func() bool { return false }) {
		t.Fatal("a poll of a closed transport found nothing")
	}
	if _, err := tr.Receive(func(netip.AddrPort, []byte) {}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Receive after close: %v", err)
	}
}
