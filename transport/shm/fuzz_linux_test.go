package shm

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// FuzzParseHello: a connector's hello comes from any process that can
// reach the socket; it is accepted only with the magic, a power-of-two
// ring size within bounds and at most a socket path after the 64 bytes,
// and never panics. What it claims is returned as is: connectorAddr
// decides what to believe (FuzzConnectorAddr).
func FuzzParseHello(f *testing.F) {
	good := make([]byte, helloSize)
	binary.LittleEndian.PutUint64(good, memMagic)
	binary.LittleEndian.PutUint64(good[8:], minRingSize)
	putAddr(good[16:], netip.MustParseAddrPort("[::1]:7"))
	f.Add(good)
	f.Add(append(append([]byte(nil), good...), "/tmp/x.sock"...))
	f.Add(append(append([]byte(nil), good...), make([]byte, maxSockPath+1)...))
	f.Add(good[:17])
	f.Add(make([]byte, helloSize))
	old := append([]byte(nil), good...)
	binary.LittleEndian.PutUint64(old, 0x326d687363707265) // "erpcshm2": the previous version
	f.Add(old)
	f.Fuzz(func(t *testing.T, b []byte) {
		ring, claim, sock, err := parseHello(b)
		if err != nil {
			return
		}
		if len(b) < helloSize || len(b) > helloSize+maxSockPath {
			t.Fatalf("accepted a %d-byte hello", len(b))
		}
		if binary.LittleEndian.Uint64(b) != memMagic {
			t.Fatalf("accepted magic %#x", binary.LittleEndian.Uint64(b))
		}
		if ring < minRingSize || ring > maxRingSize || ring&(ring-1) != 0 {
			t.Fatalf("accepted ring size %d", ring)
		}
		again := make([]byte, helloSize, len(b))
		copy(again, b)
		putAddr(again[16:], claim)
		if string(append(again, sock...)) != string(b) {
			t.Fatalf("claim %v %q does not round-trip", claim, sock)
		}
	})
}

// FuzzParseReply: the listener's greeting and reply come from whatever
// process listens on the socket the connector dialed; they are accepted
// only with the magic and a known status, and never panic.
func FuzzParseReply(f *testing.F) {
	for _, st := range []uint64{statusOK, statusDuplicate, statusFull, 3, 1 << 63} {
		b := make([]byte, helloSize)
		binary.LittleEndian.PutUint64(b, memMagic)
		binary.LittleEndian.PutUint64(b[8:], st)
		putAddr(b[16:], netip.MustParseAddrPort("[fd65:7368::1]:1"))
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(make([]byte, helloSize+1))
	f.Fuzz(func(t *testing.T, b []byte) {
		status, peer, err := parseReply(b)
		if err != nil {
			return
		}
		if len(b) != helloSize || binary.LittleEndian.Uint64(b) != memMagic {
			t.Fatalf("accepted a %d-byte message with magic %#x", len(b), binary.LittleEndian.Uint64(b))
		}
		if status != statusOK && status != statusDuplicate && status != statusFull {
			t.Fatalf("accepted status %d", status)
		}
		var again [helloSize]byte
		copy(again[:], b)
		putAddr(again[16:], peer)
		if string(again[:]) != string(b) {
			t.Fatalf("address %v does not round-trip", peer)
		}
	})
}
