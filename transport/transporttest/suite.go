// Package transporttest is the conformance suite every erpc-go transport
// passes: datagram delivery, batching, the largest datagram, Wait and Wake,
// and Close.
package transporttest

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// Factory makes n transports that can all reach each other, and registers
// their cleanup with t.
type Factory func(t *testing.T, n int) []transport.Transport

// Run runs the conformance suite against the transports f makes.
func Run(t *testing.T, f Factory) {
	t.Run("Datagram", func(t *testing.T) { testDatagram(t, f) })
	t.Run("Batch", func(t *testing.T) { testBatch(t, f) })
	t.Run("MaxDatagram", func(t *testing.T) { testMax(t, f) })
	t.Run("WaitForData", func(t *testing.T) { testWaitForData(t, f) })
	t.Run("WaitDeadline", func(t *testing.T) { testWaitDeadline(t, f) })
	t.Run("Wake", func(t *testing.T) { testWake(t, f) })
	t.Run("ManyPeers", func(t *testing.T) { testManyPeers(t, f) })
	t.Run("Close", func(t *testing.T) { testClose(t, f) })
}

type datagram struct {
	from netip.AddrPort
	data []byte
}

// collect receives until want datagrams arrived or the deadline passes.
func collect(t *testing.T, tr transport.Transport, want int, within time.Duration) []datagram {
	t.Helper()
	var got []datagram
	deadline := time.Now().Add(within)
	for len(got) < want && time.Now().Before(deadline) {
		if _, err := tr.Receive(func(from netip.AddrPort, data []byte) {
			got = append(got, datagram{from, bytes.Clone(data)})
		}); err != nil {
			t.Fatalf("receive: %v", err)
		}
		if len(got) < want {
			if err := tr.Wait(deadline); err != nil {
				t.Fatalf("wait: %v", err)
			}
		}
	}
	return got
}

func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func testDatagram(t *testing.T, f Factory) {
	tr := f(t, 2)
	a, b := tr[0], tr[1]
	msg := transport.Message{To: b.LocalAddr(), Head: []byte("head:"), Payload: []byte("payload")}
	if err := a.Send([]transport.Message{msg}); err != nil {
		t.Fatal(err)
	}
	got := collect(t, b, 1, 5*time.Second)
	if len(got) != 1 {
		t.Fatalf("received %d datagrams, want 1", len(got))
	}
	if string(got[0].data) != "head:payload" || got[0].from != a.LocalAddr() {
		t.Fatalf("received %q from %v, want %q from %v", got[0].data, got[0].from, "head:payload", a.LocalAddr())
	}
	// Head alone, and an empty datagram.
	if err := a.Send([]transport.Message{{To: b.LocalAddr(), Head: []byte("h")}, {To: b.LocalAddr()}}); err != nil {
		t.Fatal(err)
	}
	got = collect(t, b, 2, 5*time.Second)
	if len(got) != 2 || string(got[0].data)+string(got[1].data) != "h" {
		t.Fatalf("head-only and empty datagrams: %v", got)
	}
}

func testBatch(t *testing.T, f Factory) {
	tr := f(t, 2)
	a, b := tr[0], tr[1]
	const n = 64
	max := min(a.MaxDatagram(), b.MaxDatagram())
	var msgs []transport.Message
	want := map[string]bool{}
	for i := range n {
		size := []int{2, 40, 100, 1000, max / 2, max}[i%6]
		head := fmt.Appendf(nil, "%02d", i)
		p := payload(size-len(head), byte(i))
		msgs = append(msgs, transport.Message{To: b.LocalAddr(), Head: head, Payload: p})
		want[string(append(bytes.Clone(head), p...))] = true
	}
	if err := a.Send(msgs); err != nil {
		t.Fatal(err)
	}
	got := collect(t, b, n, 5*time.Second)
	if len(got) != n {
		t.Fatalf("received %d of %d datagrams sent in one batch", len(got), n)
	}
	for _, d := range got {
		if !want[string(d.data)] {
			t.Fatalf("received a datagram that was not sent (%d bytes)", len(d.data))
		}
		delete(want, string(d.data))
	}
}

func testMax(t *testing.T, f Factory) {
	tr := f(t, 2)
	a, b := tr[0], tr[1]
	max := a.MaxDatagram()
	if max < 1200 {
		t.Fatalf("MaxDatagram %d: too small to carry a protocol packet", max)
	}
	err := a.Send([]transport.Message{
		{To: b.LocalAddr(), Payload: payload(max+1, 1)},
		{To: b.LocalAddr(), Payload: payload(max, 2)},
	})
	if !errors.Is(err, transport.ErrTooLarge) {
		t.Fatalf("sending %d bytes: %v, want ErrTooLarge", max+1, err)
	}
	got := collect(t, b, 1, 5*time.Second)
	if len(got) != 1 || !bytes.Equal(got[0].data, payload(max, 2)) {
		t.Fatalf("the datagram of exactly MaxDatagram bytes did not arrive intact")
	}
}

func testWaitForData(t *testing.T, f Factory) {
	tr := f(t, 2)
	a, b := tr[0], tr[1]
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = a.Send([]transport.Message{{To: b.LocalAddr(), Head: []byte("wake up")}})
	}()
	start := time.Now()
	got := collect(t, b, 1, 10*time.Second)
	if len(got) != 1 {
		t.Fatal("datagram never arrived")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Wait slept %v past the datagram's arrival", d)
	}
}

func testWaitDeadline(t *testing.T, f Factory) {
	b := f(t, 1)[0]
	start := time.Now()
	deadline := start.Add(30 * time.Millisecond)
	for time.Now().Before(deadline) {
		if err := b.Wait(deadline); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Wait returned %v after a 30 ms deadline", d)
	}
}

func testWake(t *testing.T, f Factory) {
	b := f(t, 1)[0]
	// A Wake before Wait makes it return at once.
	b.Wake()
	start := time.Now()
	if err := b.Wait(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Wait after Wake slept %v", d)
	}
	// A Wake during Wait ends it; many goroutines may wake at once.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			time.Sleep(10 * time.Millisecond)
			b.Wake()
		})
	}
	start = time.Now()
	if err := b.Wait(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Wait slept %v despite Wake", d)
	}
}

func testManyPeers(t *testing.T, f Factory) {
	const peers = 8
	tr := f(t, peers+1)
	sink := tr[0]
	for i, p := range tr[1:] {
		if err := p.Send([]transport.Message{{To: sink.LocalAddr(), Head: []byte{byte(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, sink, peers, 5*time.Second)
	if len(got) != peers {
		t.Fatalf("received from %d of %d peers", len(got), peers)
	}
	for _, d := range got {
		if i := int(d.data[0]); d.from != tr[1+i].LocalAddr() {
			t.Fatalf("datagram from peer %d says it came from %v, want %v", i, d.from, tr[1+i].LocalAddr())
		}
	}
}

func testClose(t *testing.T, f Factory) {
	tr := f(t, 2)
	a, b := tr[0], tr[1]
	done := make(chan error, 1)
	go func() {
		var err error
		for err == nil {
			err = b.Wait(time.Time{})
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, transport.ErrClosed) {
			t.Fatalf("Wait after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a Wait in progress")
	}
	if _, err := b.Receive(func(netip.AddrPort, []byte) {}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Receive after Close: %v", err)
	}
	if err := b.Send([]transport.Message{{To: a.LocalAddr(), Head: []byte("x")}}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Sending to a closed peer is not an error: the network drops it.
	if err := a.Send([]transport.Message{{To: b.LocalAddr(), Head: []byte("x")}}); err != nil {
		t.Fatalf("send to a closed peer: %v", err)
	}
}
