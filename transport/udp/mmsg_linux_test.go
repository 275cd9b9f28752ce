//go:build linux && !erpc_portable

package udp

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestGSOAccepted: on a kernel with UDP GSO the trains go out as GSO sends
// and the kernel accepts them (a refusal would switch gso off).
func TestGSOAccepted(t *testing.T) {
	a, b := listenPair(t)
	if !a.gso {
		t.Skip("this kernel has no UDP_SEGMENT: the per-datagram path is used")
	}
	var msgs []transport.Message
	for i := range 64 {
		msgs = append(msgs, transport.Message{To: b.LocalAddr(), Head: []byte{byte(i)}, Payload: bytes.Repeat([]byte{7}, 1199)})
	}
	if err := a.Send(msgs); err != nil {
		t.Fatal(err)
	}
	if got := receiveN(t, b, len(msgs)); len(got) != len(msgs) {
		t.Fatalf("received %d datagrams, want %d", len(got), len(msgs))
	}
	if !a.gso {
		t.Fatal("the kernel refused a GSO train of 64 x 1200 B")
	}
}

// TestSendReceiveAllocs: the batch path allocates nothing per datagram.
func TestSendReceiveAllocs(t *testing.T) {
	a, b := listenPair(t)
	msgs := make([]transport.Message, 8)
	for i := range msgs {
		msgs[i] = transport.Message{To: b.LocalAddr(), Head: make([]byte, 40), Payload: make([]byte, 1000)}
	}
	count := 0
	fn := func(netip.AddrPort, []byte) { count++ }
	allocs := testing.AllocsPerRun(100, func() {
		if err := a.Send(msgs); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(msgs); {
			n, err := b.Receive(fn)
			if err != nil {
				t.Fatal(err)
			}
			got += n
			if n == 0 {
				b.Wait(time.Now().Add(10 * time.Millisecond))
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch of %d datagrams, want 0", allocs, len(msgs))
	}
}

// TestWaitAllocs: a Wait that ends by its deadline or by Wake allocates
// nothing; on a busy machine the loop parks and is woken on every call.
func TestWaitAllocs(t *testing.T) {
	a, _ := listenPair(t)
	ended := 0
	allocs := testing.AllocsPerRun(200, func() {
		start := time.Now()
		if err := a.Wait(start.Add(50 * time.Microsecond)); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) >= 50*time.Microsecond {
			ended++
		}
	})
	if allocs != 0 || ended == 0 {
		t.Fatalf("by the deadline: %v allocations per Wait (%d of 200 reached it), want 0", allocs, ended)
	}
	parked, stop := make(chan struct{}), make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-parked:
				time.Sleep(100 * time.Microsecond) // let it park
				a.Wake()
			case <-stop:
				return
			}
		}
	}()
	woken := 0
	allocs = testing.AllocsPerRun(200, func() {
		parked <- struct{}{}
		start := time.Now()
		if err := a.Wait(start.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) < time.Second {
			woken++
		}
	})
	if allocs != 0 || woken < 200 {
		t.Fatalf("by Wake: %v allocations per Wait (%d of 201 woken), want 0", allocs, woken)
	}
}
