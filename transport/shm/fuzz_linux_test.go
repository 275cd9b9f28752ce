package shm

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// FuzzParseHello: a connector's hello comes from any process that can
// reach the socket; it is accepted only with the magic and a power-of-two
// ring size within bounds, and never panics.
func FuzzParseHello(f *testing.F) {
	good := make([]byte, helloSize)
	binary.LittleEndian.PutUint64(good, memMagic)
	binary.LittleEndian.PutUint64(good[8:], minRingSize)
	putAddr(good[16:], netip.MustParseAddrPort("[::1]:7"))
	f.Add(good)
	f.Add(good[:17])
	f.Add(make([]byte, helloSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		ring, peer, err := parseHello(b)
		if err != nil {
			return
		}
		if ring < minRingSize || ring > maxRingSize || ring&(ring-1) != 0 {
			t.Fatalf("accepted ring size %d", ring)
		}
		var again [helloSize]byte
		copy(again[:], b)
		putAddr(again[16:], peer)
		if string(again[:]) != string(b) {
			t.Fatalf("address %v does not round-trip", peer)
		}
	})
}
