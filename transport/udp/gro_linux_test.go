//go:build linux && !erpc_portable

package udp

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

func groOf(t *testing.T, tr *Transport) int {
	t.Helper()
	var v int
	var err error
	tr.rc.Control(func(fd uintptr) { v, err = unix.GetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO) })
	if err != nil {
		t.Skipf("UDP_GRO not readable here: %v", err)
	}
	return v
}

// TestGROWaitsForBursts: a socket that finds one datagram at a time (a
// ping-pong) keeps GRO off; the first batch holding a burst switches it
// on.
func TestGROWaitsForBursts(t *testing.T) {
	a, b := listenPair(t)
	for i := range 20 {
		sendText(t, a, b.LocalAddr(), fmt.Sprint("call ", i))
		if got := receiveN(t, b, 1); len(got) != 1 {
			t.Fatalf("call %d: received %d datagrams", i, len(got))
		}
	}
	if groOf(t, b) != 0 {
		t.Fatal("GRO is on after single datagrams only")
	}
	var msgs []transport.Message
	for range 8 {
		msgs = append(msgs, transport.Message{To: b.LocalAddr(), Payload: make([]byte, 1400)})
	}
	if err := a.Send(msgs); err != nil {
		t.Fatal(err)
	}
	if got := receiveN(t, b, 8); len(got) != 8 {
		t.Fatalf("received %d of 8", len(got))
	}
	if groOf(t, b) != 1 {
		t.Fatal("GRO is still off after a burst")
	}
}
