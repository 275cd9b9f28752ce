//go:build linux

package xdp

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestReviewMTULoweredAfterListen: MaxDatagram is read from the MTU once,
// at Listen, and "datagrams are limited to the MTU". When the interface's
// MTU is lowered afterwards (1500 to 1280 at both ends), a datagram of
// MaxDatagram bytes no longer fits: Send must refuse it (ErrTooLarge) or
// it must arrive; a kernel UDP socket sends it (fragmented) and it
// arrives. Here Send says nothing and the datagram is lost.
func TestReviewMTULoweredAfterListen(t *testing.T) {
	p := newVethPair(t)
	a := listenXDP(t, p, p.A, p.AddrA, Options{})
	b := listenUDP(t, p.B, p.AddrB)
	warm := []transport.Message{{To: b.LocalAddr(), Payload: []byte("warm")}}
	if err := a.Send(warm); err != nil {
		t.Fatal(err)
	}
	if len(rcollect(t, b, 1, 3*time.Second)) != 1 {
		t.Fatal("warm-up datagram lost")
	}
	for _, ns := range []string{p.A, p.B} {
		sh(t, "ip", "-n", ns, "link", "set", "dev", p.ifname, "mtu", "1280")
	}
	pl := bytes.Repeat([]byte{0x5a}, a.MaxDatagram())
	err := a.Send([]transport.Message{{To: b.LocalAddr(), Payload: pl}})
	got := rcollect(t, b, 1, 2*time.Second)
	t.Logf("MTU 1280 now, MaxDatagram still %d: Send said %v, %d arrived; stats %+v", a.MaxDatagram(), err, len(got), a.Stats())
	if !errors.Is(err, transport.ErrTooLarge) && len(got) != 1 {
		t.Errorf("a %d-byte datagram after the MTU dropped to 1280: Send returned %v and it never arrived", len(pl), err)
	}
	// The control: kernel UDP from A.
	k := listenUDP(t, p.A, p.AddrA)
	if err := k.Send([]transport.Message{{To: b.LocalAddr(), Payload: pl}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("control: kernel UDP from A, same datagram: %d arrived", len(rcollect(t, b, 1, 2*time.Second)))
}
