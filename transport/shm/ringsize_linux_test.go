//go:build linux

package shm

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// TestRingSizesMismatched: listener and connector with random RingSizes
// (64 KiB to 4 MiB each, seeded) exchange datagrams of random sizes up to
// each sender's MaxDatagram, half of them near it, both ways: every one
// arrives, once and in order, whichever side chose the smaller ring (the listener's ring is
// never smaller than its own RingSize, so it carries its MaxDatagram).
func TestRingSizesMismatched(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	for i := range 8 {
		lr, cr := minRingSize<<rng.IntN(7), minRingSize<<rng.IntN(7)
		path := filepath.Join(t.TempDir(), "s.sock")
		ln, err := Listen(path, Options{RingSize: lr})
		if err != nil {
			t.Fatal(err)
		}
		cl, err := Listen("", Options{RingSize: cr})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := cl.Resolve(path)
		if err != nil {
			t.Fatal(err)
		}
		waitConns(t, ln, 1)
		cli := ln.snap.Load().conns[0].peer()
		for _, dir := range []struct {
			from, to *Transport
			addr     netip.AddrPort
		}{{ln, cl, cli}, {cl, ln, srv}} {
			var sent [][]byte
			for range 40 {
				n := 1 + rng.IntN(dir.from.MaxDatagram())
				if rng.IntN(2) == 0 { // near the largest: what a small ring cannot hold
					n = dir.from.MaxDatagram() - rng.IntN(64)
				}
				d := make([]byte, n)
				d[0], d[len(d)-1] = byte(len(sent)), byte(len(sent)>>8)
				sent = append(sent, d)
			}
			for _, d := range sent {
				if err := dir.from.Send([]transport.Message{{To: dir.addr, Head: d}}); err != nil {
					t.Fatal(err)
				}
			}
			got := 0
			for end := time.Now().Add(5 * time.Second); got < len(sent) && time.Now().Before(end); {
				dir.from.Receive(func(netip.AddrPort, []byte) {}) // moves the backlog
				dir.to.Receive(func(_ netip.AddrPort, d []byte) {
					if got < len(sent) && !bytes.Equal(d, sent[got]) {
						t.Fatalf("round %d: datagram %d differs (len %d, want %d)", i, got, len(d), len(sent[got]))
					}
					got++
				})
			}
			if got != len(sent) {
				t.Fatalf("round %d: listener ring %d KiB, connector ring %d KiB: %d of %d datagrams arrived",
					i, lr>>10, cr>>10, got, len(sent))
			}
		}
		cl.Close()
		ln.Close()
	}
}

// TestDefaultRingSize: a connection between transports with default
// options maps 4 MiB rings, each side's and its peer's: twice a session's
// window (TestRingHoldsWindows), half the 8 MiB they were, which spread
// large messages over more memory than the caches hold.
func TestDefaultRingSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := Listen(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cl, err := Listen("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Resolve(path); err != nil {
		t.Fatal(err)
	}
	waitConns(t, ln, 1)
	for _, tr := range []*Transport{ln, cl} {
		c := tr.snap.Load().conns[0]
		if mine, peers := len(c.mem)-pageSize, len(c.peerMem)-pageSize; mine != 4<<20 || peers != 4<<20 {
			t.Fatalf("rings of %d and %d bytes, want 4 MiB each", mine, peers)
		}
	}
	if ln.MaxDatagram() != maxDatagram || cl.MaxDatagram() != maxDatagram {
		t.Fatalf("MaxDatagram %d and %d, want %d", ln.MaxDatagram(), cl.MaxDatagram(), maxDatagram)
	}
}
