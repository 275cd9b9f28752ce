package seal

import (
	"crypto/tls"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// testSuites are the suites the package supports.
var testSuites = []struct {
	name string
	id   uint16
}{
	{"AES128GCM", tls.TLS_AES_128_GCM_SHA256},
	{"AES256GCM", tls.TLS_AES_256_GCM_SHA384},
}

// testSecret returns a seeded pseudo-random traffic secret of suite's hash
// length.
func testSecret(t testing.TB, id uint16, seed uint64) []byte {
	t.Helper()
	s, err := suiteByID(id)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 0x5ea1))
	b := make([]byte, s.hash().Size())
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// pair returns a Sealer and the Opener of the same direction.
func pair(t testing.TB, id uint16, seed uint64, level Level) (*Sealer, *Opener) {
	t.Helper()
	secret := testSecret(t, id, seed)
	s, err := NewSealer(id, secret, level)
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOpener(id, secret, level)
	if err != nil {
		t.Fatal(err)
	}
	return s, o
}

// payloadFor is a plaintext that names its packet number, so a test can
// tell which packet a plaintext came from.
func payloadFor(pn uint64, size int) []byte {
	p := make([]byte, max(size, 8))
	binary.LittleEndian.PutUint64(p, pn)
	for i := 8; i < len(p); i++ {
		p[i] = byte(pn) ^ byte(i)
	}
	return p
}

// sealN seals n packets (payload size bytes naming each packet number).
func sealN(s *Sealer, n, size int) [][]byte {
	pkts := make([][]byte, n)
	for i := range pkts {
		pn := s.NextPN()
		pkts[i] = s.Seal(nil, 0xD0D0+pn, payloadFor(pn, size))
	}
	return pkts
}

// mustOpen opens pkt and checks the plaintext names the packet's number.
func mustOpen(t *testing.T, o *Opener, pkt []byte) {
	t.Helper()
	h, _ := ParseHeader(pkt)
	pt, err := o.Open(nil, pkt)
	if err != nil {
		t.Fatalf("pn %d (phase %v): %v; drops %+v", h.PN, h.KeyPhase, err, o.Drops())
	}
	if len(pt) < 8 || binary.LittleEndian.Uint64(pt) != h.PN {
		t.Fatalf("pn %d: plaintext names another packet", h.PN)
	}
}

// mustDrop opens pkt and checks it is dropped with want.
func mustDrop(t *testing.T, o *Opener, pkt []byte, want error) {
	t.Helper()
	before := o.Drops().Total()
	out, err := o.Open(make([]byte, 0, 8), pkt)
	if err != want {
		h, _ := ParseHeader(pkt)
		t.Fatalf("pn %d: got %v, want %v", h.PN, err, want)
	}
	if len(out) != 0 {
		t.Fatalf("a dropped packet appended %d bytes", len(out))
	}
	if o.Drops().Total() != before+1 {
		t.Fatalf("drop not counted: %+v", o.Drops())
	}
}
