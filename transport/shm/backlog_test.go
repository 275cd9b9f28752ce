//go:build linux

package shm_test

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/shm"
)

// TestFullRingLosesNothing: a sender that writes four rings' worth of
// datagrams to a peer that reads nothing meanwhile loses none of them:
// what finds the ring full waits in the connection's backlog and reaches
// the peer, in order, as the peer reads (the sender's loop turns: its
// Receive and Wait move the backlog). Before, the surplus was dropped.
func TestFullRingLosesNothing(t *testing.T) {
	opts := shm.Options{RingSize: 64 << 10}
	a, b := pair(t, opts)
	const size, n = 1000, 4 * (64 << 10) / 1000
	payload := make([]byte, size-4)
	for i := range n {
		var head [4]byte
		binary.LittleEndian.PutUint32(head[:], uint32(i))
		if err := a.Send([]transport.Message{{To: b.LocalAddr(), Head: head[:], Payload: payload}}); err != nil {
			t.Fatal(err)
		}
	}
	if st := a.Stats(); st.Backlogged == 0 || st.Dropped != 0 {
		t.Fatalf("after %d datagrams into a 64 KiB ring: %+v, want some backlogged and none dropped", n, st)
	}
	got := 0
	for deadline := time.Now().Add(5 * time.Second); got < n && time.Now().Before(deadline); {
		k, err := b.Receive(func(_ netip.AddrPort, d []byte) {
			if i := int(binary.LittleEndian.Uint32(d)); i != got || len(d) != size {
				t.Fatalf("datagram %d arrived as %d (%d bytes)", got, i, len(d))
			}
			got++
		})
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			// The sender's loop: Wait comes back within the retry
			// interval while a backlog waits, and Receive moves it.
			a.Wait(time.Now().Add(time.Second))
			a.Receive(func(netip.AddrPort, []byte) {})
		}
	}
	if got != n {
		t.Fatalf("received %d of %d datagrams", got, n)
	}
	if st := a.Stats(); st.Dropped != 0 {
		t.Fatalf("stats %+v: dropped datagrams", st)
	}
}

// TestBacklogBounded: a peer that never reads (hung or hostile) costs at
// most a connection's backlog bound, 32 MiB (half the 64 MiB over all
// connections); past it datagrams are dropped and counted.
func TestBacklogBounded(t *testing.T) {
	a, b := pair(t, shm.Options{})
	d := make([]byte, a.MaxDatagram())
	n := (80 << 20) / len(d)
	for range n {
		if err := a.Send([]transport.Message{{To: b.LocalAddr(), Payload: d}}); err != nil {
			t.Fatal(err)
		}
	}
	st := a.Stats()
	held := int(st.Backlogged) * len(d)
	t.Logf("%d datagrams of %d bytes: %+v", n, len(d), st)
	if st.Dropped == 0 || held > 32<<20 || held < 31<<20 {
		t.Fatalf("80 MiB to a peer that reads nothing: %+v (%d MiB backlogged)", st, held>>20)
	}
}
