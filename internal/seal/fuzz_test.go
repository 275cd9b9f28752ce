package seal

import (
	"bytes"
	"crypto/tls"
	"testing"
)

// fuzzSecret keys FuzzOpen's Opener; the seeds are sealed under it.
var fuzzSecret = bytes.Repeat([]byte{0x5a}, 32)

// fuzzSeeds are valid packets: several packet numbers and sizes, a
// next-generation packet (other key phase), and one of another level.
func fuzzSeeds(t testing.TB) [][]byte {
	s, err := NewSealer(tls.TLS_AES_128_GCM_SHA256, fuzzSecret, LevelApplication)
	if err != nil {
		t.Fatal(err)
	}
	var seeds [][]byte
	for _, size := range []int{0, 1, 32, 200} {
		seeds = append(seeds, s.Seal(nil, uint64(size), payloadFor(s.NextPN(), size)))
	}
	s.UpdateKey()
	seeds = append(seeds, s.Seal(nil, 1, payloadFor(s.NextPN(), 40)))
	hs, _ := NewSealer(tls.TLS_AES_128_GCM_SHA256, fuzzSecret, LevelHandshake)
	seeds = append(seeds, hs.Seal(nil, 1, payloadFor(0, 40)), nil, []byte{Magic})
	return seeds
}

// FuzzOpen: Open never panics on any input; whatever opens is a packet
// sealed under the key, and opening it again is a replay.
func FuzzOpen(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		o, err := NewOpener(tls.TLS_AES_128_GCM_SHA256, fuzzSecret, LevelApplication)
		if err != nil {
			t.Fatal(err)
		}
		pt, err := o.Open(nil, pkt)
		if err != nil {
			if o.Drops().Total() != 1 || pt != nil {
				t.Fatalf("drop not counted or output appended: %+v", o.Drops())
			}
			return
		}
		if len(pt) != len(pkt)-Overhead {
			t.Fatalf("plaintext %d bytes from a %d-byte packet", len(pt), len(pkt))
		}
		if _, err := o.Open(nil, pkt); err != ErrReplay {
			t.Fatalf("reopened: %v", err)
		}
	})
}

// FuzzParseHeader: ParseHeader never panics, and a header it accepts is
// written back byte for byte.
func FuzzParseHeader(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		h, err := ParseHeader(pkt)
		if err != nil {
			return
		}
		var b [HeaderLen]byte
		h.put(b[:])
		if !bytes.Equal(b[:], pkt[:HeaderLen]) || !IsSealed(pkt) {
			t.Fatalf("header %+v does not round-trip: %x", h, pkt[:HeaderLen])
		}
	})
}
