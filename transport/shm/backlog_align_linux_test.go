//go:build linux

package shm_test

import (
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/shm"
)

// TestBacklogKeepsAlignment: a ring record's body of 2 KiB or more starts
// on a cache line (PROMISES) also when its datagram waited in the backlog
// because the peer's ring was full: the backlog keeps the head's length.
// An outside review found 492 of 1,000 such bodies off a line when the
// backlog handed the ring head and body joined.
func TestBacklogKeepsAlignment(t *testing.T) {
	x, y := pair(t, shm.Options{})
	head := make([]byte, 40)
	body := make([]byte, 8192)
	const n = 1000 // 8 MiB: twice the 4 MiB ring
	for i := range n {
		head[0] = byte(i)
		if err := x.Send([]transport.Message{{To: y.LocalAddr(), Head: head, Payload: body}}); err != nil {
			t.Fatal(err)
		}
	}
	if x.Stats().Backlogged == 0 {
		t.Fatal("nothing went to the backlog: the test did not reach its case")
	}
	got, misaligned := 0, 0
	deadline := time.Now().Add(10 * time.Second)
	for got < n && time.Now().Before(deadline) {
		k, _ := y.Receive(func(_ netip.AddrPort, d []byte) {
			if len(d) == len(head)+len(body) {
				if uintptr(unsafe.Pointer(&d[len(head)]))%64 != 0 {
					misaligned++
				}
				got++
			}
		})
		if k == 0 {
			x.Receive(func(netip.AddrPort, []byte) {}) // moves the backlog (flushAll)
			y.Wait(time.Now().Add(5 * time.Millisecond))
		}
	}
	t.Logf("%d datagrams of a %d-byte head and a %d-byte body received, %d with the body off a cache line", got, len(head), len(body), misaligned)
	if got < n {
		t.Fatalf("%d of %d datagrams received", got, n)
	}
	if misaligned > 0 {
		t.Fatalf("%d of %d bodies of 8 KiB did not start on a line", misaligned, got)
	}
}
