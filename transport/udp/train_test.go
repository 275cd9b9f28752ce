package udp

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

func listenPair(t *testing.T) (a, b *Transport) {
	t.Helper()
	for _, p := range []**Transport{&a, &b} {
		tr, err := Listen("127.0.0.1:0", Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		*p = tr
	}
	return a, b
}

// receiveN collects datagrams on tr until n arrived or the time is up.
func receiveN(t *testing.T, tr *Transport, n int) [][]byte {
	t.Helper()
	var got [][]byte
	end := time.Now().Add(5 * time.Second)
	for len(got) < n && time.Now().Before(end) {
		if _, err := tr.Receive(func(_ netip.AddrPort, d []byte) {
			got = append(got, bytes.Clone(d))
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) < n {
			if err := tr.Wait(time.Now().Add(100 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got
}

// TestTrains sends runs of equal-sized datagrams with a shorter tail, the
// shape of a multi-packet message, which the Linux path turns into GSO
// trains (and the receiver into GRO buffers): every datagram must arrive
// whole, in its own Receive callback, in order on loopback.
func TestTrains(t *testing.T) {
	a, b := listenPair(t)
	const n, size = 150, 1400
	var msgs []transport.Message
	for i := range n {
		l := size
		if i%50 == 49 {
			l = 300 // ends a train
		}
		p := bytes.Repeat([]byte{byte(i)}, l-2)
		msgs = append(msgs, transport.Message{To: b.LocalAddr(), Head: []byte{byte(i), byte(i >> 8)}, Payload: p})
	}
	if err := a.Send(msgs); err != nil {
		t.Fatal(err)
	}
	got := receiveN(t, b, n)
	if len(got) != n {
		t.Fatalf("received %d datagrams, want %d", len(got), n)
	}
	for i, d := range got {
		want := msgs[i].Len()
		if len(d) != want || d[0] != byte(i) || d[len(d)-1] != byte(i) {
			t.Fatalf("datagram %d: %d bytes starting %d, want %d bytes of %d", i, len(d), d[0], want, byte(i))
		}
	}
}
