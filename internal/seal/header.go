package seal

import (
	"encoding/binary"
	"errors"
)

// Level is the encryption level a protected packet was sealed at: the
// handshake's three levels, each with its own keys and packet numbers.
type Level uint8

// The encryption levels, as on the wire (flags bits 0-1).
const (
	LevelInitial     Level = 0 // keys anyone can derive from the client's chosen ID
	LevelHandshake   Level = 1 // keys from the TLS handshake secrets
	LevelApplication Level = 2 // keys from the TLS application traffic secrets
	levelCount       Level = 3 // wire value 3 is invalid
)

func (l Level) String() string {
	switch l {
	case LevelInitial:
		return "initial"
	case LevelHandshake:
		return "handshake"
	case LevelApplication:
		return "application"
	}
	return "invalid"
}

// Header is a protected packet's outer header. It travels in the clear and
// is the AEAD's associated data, so it is authenticated, not encrypted.
type Header struct {
	Level    Level
	KeyPhase bool   // the sender's key generation, mod 2 (key update)
	DestID   uint64 // routes the packet to its session before it is opened
	PN       uint64 // packet number: the nonce; per level and direction
}

// Wire sizes; see the package documentation for the layout.
const (
	HeaderLen = 18
	TagLen    = 16
	Overhead  = HeaderLen + TagLen
)

// Magic is a protected packet's first byte. erpc's plaintext packets start
// with 0xE7 (wire.Magic), so a receiver tells the two apart by one byte.
const Magic = 0xE9

// MaxPacketNumber is the largest packet number a Sealer assigns and an
// Opener accepts (QUIC's bound). Unreachable in practice: 2^62 packets are
// 146,000 years at a million packets a second.
const MaxPacketNumber = 1<<62 - 1

// Flags byte (offset 1).
const (
	flagLevelMask = 0x03
	flagKeyPhase  = 0x04
	flagReserved  = 0xF8 // must be zero: room for a later format
)

// Errors of ParseHeader; package values, so a drop never allocates.
var (
	ErrShort    = errors.New("seal: packet shorter than header and tag")
	ErrMagic    = errors.New("seal: not a protected packet (first byte)")
	ErrBadFlags = errors.New("seal: invalid level or reserved flag bits set")
	ErrBadPN    = errors.New("seal: packet number above MaxPacketNumber")
)

// IsSealed reports whether pkt looks like a protected packet: long enough
// for a header and a tag, with the protected magic. It says nothing about
// whether it will open.
func IsSealed(pkt []byte) bool {
	return len(pkt) >= Overhead && pkt[0] == Magic
}

// ParseHeader decodes a protected packet's outer header. It checks the
// length (header and tag must fit), the magic, the flags and the packet
// number's range; it never panics and never allocates.
func ParseHeader(pkt []byte) (Header, error) {
	if len(pkt) < Overhead {
		return Header{}, ErrShort
	}
	if pkt[0] != Magic {
		return Header{}, ErrMagic
	}
	flags := pkt[1]
	level := Level(flags & flagLevelMask)
	if flags&flagReserved != 0 || level >= levelCount {
		return Header{}, ErrBadFlags
	}
	h := Header{
		Level:    level,
		KeyPhase: flags&flagKeyPhase != 0,
		DestID:   binary.LittleEndian.Uint64(pkt[2:10]),
		PN:       binary.LittleEndian.Uint64(pkt[10:18]),
	}
	if h.PN > MaxPacketNumber {
		return Header{}, ErrBadPN
	}
	return h, nil
}

// put writes h into b[:HeaderLen].
func (h *Header) put(b []byte) {
	_ = b[HeaderLen-1]
	b[0] = Magic
	flags := byte(h.Level) & flagLevelMask
	if h.KeyPhase {
		flags |= flagKeyPhase
	}
	b[1] = flags
	binary.LittleEndian.PutUint64(b[2:10], h.DestID)
	binary.LittleEndian.PutUint64(b[10:18], h.PN)
}
