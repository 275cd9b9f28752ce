package tcp_test

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestSlowReader: a receiver that does not call Receive for a while
// fills the kernel's buffers and its inbox, so the sender's writes go to
// its outbox and writer (the fault, asserted: Stats.Deferred) and, past
// the outbox's bound, are dropped (counted); Send never blocks, and every
// datagram that was not dropped arrives whole and in order.
func TestSlowReader(t *testing.T) {
	a, b := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
	const size, batch, batches = 32 << 10, 64, 48 // 96 MiB: past the kernel's buffers, the inbox and the outbox
	payload := make([]byte, size-8)
	for i := range payload {
		payload[i] = byte(i * 13)
	}
	msgs := make([]transport.Message, batch)
	heads := make([]byte, 8*batch)
	seq := uint64(0)
	start := time.Now()
	for range batches {
		for i := range msgs {
			binary.BigEndian.PutUint64(heads[8*i:], seq)
			seq++
			msgs[i] = transport.Message{To: b.LocalAddr(), Head: heads[8*i : 8*i+8], Payload: payload}
		}
		if err := a.Send(msgs); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("sent %d datagrams (%d MiB) in %v without a reader", seq, seq*size>>20, time.Since(start))
	if st := a.Stats(); st.Deferred == 0 {
		t.Fatalf("no send was deferred: the test did not fill the socket (%+v)", st)
	}
	var got, next uint64
	deadline := time.Now().Add(30 * time.Second)
	for next < seq && time.Now().Before(deadline) {
		b.Receive(func(_ netip.AddrPort, d []byte) {
			s := binary.BigEndian.Uint64(d)
			if s < next || len(d) != size || string(d[8:]) != string(payload) {
				t.Fatalf("datagram %d (after %d): out of order or damaged", s, next)
			}
			next = s + 1
			got++
		})
		if st := a.Stats(); got+st.Dropped == seq {
			break
		}
		b.Wait(time.Now().Add(10 * time.Millisecond))
	}
	st := a.Stats()
	if got+st.Dropped != seq {
		t.Fatalf("received %d and dropped %d of %d", got, st.Dropped, seq)
	}
	t.Logf("received %d, dropped %d at the full outbox, %d sends deferred", got, st.Dropped, st.Deferred)
}
