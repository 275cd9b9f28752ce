//go:build linux

package xdp

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// floodPayload is datagram seq's payload: the sequence number and bytes
// derived from it, so that a corrupted or mixed-up datagram shows.
func floodPayload(seq uint32, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, seq)
	r := rand.New(rand.NewPCG(uint64(seq), 99))
	for i := 4; i < size; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func floodCheck(d []byte) (uint32, bool) {
	if len(d) < 4 {
		return 0, false
	}
	seq := binary.BigEndian.Uint32(d)
	return seq, bytes.Equal(d, floodPayload(seq, len(d)))
}

// TestReviewFloodRecovers (promise 7 and the rings): a sender floods the
// transport with more datagrams than its UMEM has frames (4096; rings of
// 2048) while its loop does not receive. Then the loop drains: what it
// gets must be intact; afterwards every datagram of paced rounds must
// arrive (the frames went back to the fill ring; nothing starved).
// During one fn, the sender floods 3000 more: the frame fn holds must
// not change until fn returns.
func TestReviewFloodRecovers(t *testing.T) {
	p := newVethPair(t)
	a := listenXDP(t, p, p.A, p.AddrA, Options{})
	macA, macB := macOf(t, p.A, p.ifname), macOf(t, p.B, p.ifname)
	raw := openRaw(t, p.B, p.ifname)
	from := netip.AddrPortFrom(p.AddrB, 6000)
	r := rand.New(rand.NewPCG(5, 6))
	seq := uint32(0)
	sendN := func(n int) {
		for i := range n {
			seq++
			raw.send(t, v4frame(macB, macA, from, a.LocalAddr(), floodPayload(seq, 8+r.IntN(1400))))
			if i%64 == 63 {
				time.Sleep(100 * time.Microsecond) // let veth's NAPI keep up: the XSK ring is what should fill
			}
		}
	}
	sendN(6000)
	ks, _ := a.KernelStats()
	got := rdrain(t, a, 300*time.Millisecond)
	bad := 0
	for _, d := range got {
		if _, ok := floodCheck(d.data); !ok || d.from != from {
			bad++
		}
	}
	t.Logf("flood of 6000 without receiving: drained %d, %d corrupt; kernel stats before the drain %+v", len(got), bad, ks)
	if bad > 0 {
		t.Errorf("%d of %d flooded datagrams came out corrupt", bad, len(got))
	}
	if ks.Rx_ring_full == 0 && ks.Rx_dropped == 0 && ks.Rx_fill_ring_empty_descs == 0 {
		t.Logf("note: the kernel dropped nothing: the flood did not overflow the rings")
	}
	// Paced rounds: all must arrive.
	for round := range 6 {
		first := seq + 1
		sendN(1000)
		got := rcollect(t, a, 1000, 3*time.Second)
		seen := map[uint32]bool{}
		for _, d := range got {
			s, ok := floodCheck(d.data)
			if !ok || s < first || seen[s] {
				t.Fatalf("round %d: a corrupt, stale or duplicate datagram (seq %d)", round, s)
			}
			seen[s] = true
		}
		if len(got) != 1000 {
			ks, _ := a.KernelStats()
			t.Errorf("round %d after the flood: %d of 1000 arrived; kernel %+v, stats %+v", round, len(got), ks, a.Stats())
		}
	}
	// Ownership: the frame fn holds does not change while the kernel
	// keeps receiving, until fn returns.
	sendN(1)
	held, changed := 0, 0
	for held == 0 {
		a.Wait(time.Now().Add(time.Second))
		a.Receive(func(_ netip.AddrPort, data []byte) {
			held++
			if held > 1 {
				return
			}
			keep := bytes.Clone(data)
			sendN(3000)
			if !bytes.Equal(keep, data) {
				changed++
			}
		})
	}
	if changed != 0 {
		t.Errorf("the datagram's bytes changed inside fn while the kernel received")
	}
	rest := rdrain(t, a, 300*time.Millisecond)
	t.Logf("after the in-fn flood: %d more drained; stats %+v", len(rest), a.Stats())
}
