package seal

import "slices"

// Sealer protects one direction's packets at one level. It is not safe for
// concurrent use: one owner (the endpoint's event loop) seals.
type Sealer struct {
	suite suite
	level Level
	cur   keyGen
	gen   uint64 // key generation; KeyPhase is gen&1
	pn    uint64 // the next packet number
	// underKey counts packets sealed under cur, against the suite's limits.
	underKey uint64
	nonce    [ivLen]byte
}

// NewSealer returns a Sealer for suite (tls.TLS_AES_128_GCM_SHA256 or
// tls.TLS_AES_256_GCM_SHA384; ChaCha20-Poly1305 is refused with
// ErrChaCha20Unsupported) keyed from a TLS 1.3 traffic secret, which it
// copies. Packet numbers start at 0.
func NewSealer(suite uint16, secret []byte, level Level) (*Sealer, error) {
	s, g, err := newKeys(suite, secret, level)
	if err != nil {
		return nil, err
	}
	return &Sealer{suite: s, level: level, cur: g}, nil
}

// Seal appends a protected packet to dst: the outer header (addressed to
// destID, with the next packet number and the current key phase), then
// plaintext encrypted, then the tag; len(plaintext)+Overhead bytes in all.
// It allocates nothing when dst has that room. plaintext may overlap
// dst's spare capacity only exactly at dst[len(dst)+HeaderLen:] (sealing
// in place); any other overlap is an error crypto/cipher panics on.
//
// Every call uses a new packet number. When the key has sealed its hard
// limit of packets (QUIC's AES-GCM limit, 2^23), Seal updates the key
// itself first: it never seals past the limit. After MaxPacketNumber
// packets it returns dst unchanged (the session must end; unreachable in
// practice).
func (s *Sealer) Seal(dst []byte, destID uint64, plaintext []byte) []byte {
	if s.pn > MaxPacketNumber {
		return dst
	}
	if s.underKey >= s.suite.hardLimit {
		s.UpdateKey()
	}
	h := Header{Level: s.level, KeyPhase: s.gen&1 == 1, DestID: destID, PN: s.pn}
	off := len(dst)
	dst = slices.Grow(dst, Overhead+len(plaintext))
	dst = dst[:off+HeaderLen]
	h.put(dst[off:])
	s.cur.nonce(&s.nonce, s.pn)
	s.pn++
	s.underKey++
	return s.cur.aead.Seal(dst, s.nonce[:], plaintext, dst[off:off+HeaderLen])
}

// UpdateDue reports that the current key has sealed half its limit: the
// endpoint should call UpdateKey (Seal forces the update at the limit).
func (s *Sealer) UpdateDue() bool { return s.underKey >= s.suite.updateDue }

// UpdateKey moves to the next key generation: later packets are sealed
// under keys derived with "erpc ku" and carry the other key phase. The
// peer's Opener follows on its own. It allocates (key derivation).
func (s *Sealer) UpdateKey() {
	s.cur = s.cur.next(s.suite)
	s.gen++
	s.underKey = 0
}

// NextPN is the packet number the next Seal assigns.
func (s *Sealer) NextPN() uint64 { return s.pn }

// Generation is the number of key updates so far (KeyPhase is its low bit).
func (s *Sealer) Generation() uint64 { return s.gen }

// Level is the encryption level the Sealer seals at.
func (s *Sealer) Level() Level { return s.level }
