package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"hash"
)

// erpc's own HKDF-Expand-Label labels (RFC 8446 §7.1 prefixes "tls13 ").
// They differ from TLS's ("key", "iv") and QUIC's ("quic key"...), so keys
// erpc derives from a secret are never keys another protocol uses.
const (
	labelKey    = "erpc key"
	labelIV     = "erpc iv"
	labelUpdate = "erpc ku"
	labelClient = "erpc client in"
	labelServer = "erpc server in"
)

// ivLen is the nonce length of every supported AEAD (TLS 1.3's iv_length).
const ivLen = 12

var (
	// ErrChaCha20Unsupported refuses TLS_CHACHA20_POLY1305_SHA256: Go's
	// standard library has ChaCha20-Poly1305 only inside crypto/tls (a
	// vendored copy that cannot be imported), and erpc's root module
	// imports no golang.org/x/crypto. crypto/tls negotiates AES-GCM when
	// both ends have AES-GCM hardware (AES-NI and PCLMULQDQ on amd64, AES
	// and PMULL on arm64) or run with GODEBUG=fips140=on; TLS 1.3 ignores
	// tls.Config.CipherSuites.
	ErrChaCha20Unsupported = errors.New("seal: TLS_CHACHA20_POLY1305_SHA256 is not supported (ChaCha20-Poly1305 is not exported by Go's standard library); " +
		"crypto/tls picks AES-GCM when both ends have AES-GCM hardware or run with GODEBUG=fips140=on")
	// ErrUnknownSuite refuses a cipher suite that is not a TLS 1.3 one.
	ErrUnknownSuite = errors.New("seal: not a TLS 1.3 cipher suite")
	// ErrSecretLen refuses a traffic secret whose length is not the
	// suite's hash length (what TLS 1.3 produces).
	ErrSecretLen = errors.New("seal: traffic secret length is not the suite's hash length")
	// ErrLevel refuses a level that is not one of the three.
	ErrLevel = errors.New("seal: invalid encryption level")
)

// suite is what a TLS 1.3 cipher suite fixes for packet protection.
type suite struct {
	id     uint16
	hash   func() hash.Hash
	keyLen int
	// updateDue and hardLimit are packets sealed under one key: the
	// Sealer asks for a key update at updateDue and forces one at
	// hardLimit (RFC 9001 §6.6's confidentiality limit).
	updateDue, hardLimit uint64
}

// QUIC's AES-GCM confidentiality limit (RFC 9001 §6.6): 2^23 packets per
// key. The Sealer asks for an update at half of it, leaving the endpoint
// 4 million packets of slack before it forces one itself.
const (
	aesGCMLimit     = 1 << 23
	aesGCMUpdateDue = aesGCMLimit / 2
)

func suiteByID(id uint16) (suite, error) {
	switch id {
	case tls.TLS_AES_128_GCM_SHA256:
		return suite{id, sha256.New, 16, aesGCMUpdateDue, aesGCMLimit}, nil
	case tls.TLS_AES_256_GCM_SHA384:
		return suite{id, sha512.New384, 32, aesGCMUpdateDue, aesGCMLimit}, nil
	case tls.TLS_CHACHA20_POLY1305_SHA256:
		return suite{}, ErrChaCha20Unsupported
	}
	return suite{}, ErrUnknownSuite
}

// SuiteSupported reports whether NewSealer and NewOpener accept suite, and
// if not, why: the handshake can check the suite crypto/tls negotiated
// before it installs keys.
func SuiteSupported(id uint16) error {
	_, err := suiteByID(id)
	return err
}

// expandLabel is HKDF-Expand-Label (RFC 8446 §7.1):
//
//	HkdfLabel = uint16 length || opaque label<7..255> = "tls13 " + label ||
//	            opaque context<0..255>
//
// It panics only for a length HKDF cannot produce (over 255 hash lengths)
// or a label or context over 255 bytes: this package's constants never
// ask for one.
func expandLabel(h func() hash.Hash, secret []byte, label string, context []byte, length int) []byte {
	const prefix = "tls13 "
	if len(prefix)+len(label) > 255 || len(context) > 255 || length > 0xFFFF {
		panic("seal: HKDF-Expand-Label argument out of range")
	}
	info := make([]byte, 0, 2+1+len(prefix)+len(label)+1+len(context))
	info = binary.BigEndian.AppendUint16(info, uint16(length))
	info = append(info, byte(len(prefix)+len(label)))
	info = append(info, prefix...)
	info = append(info, label...)
	info = append(info, byte(len(context)))
	info = append(info, context...)
	out, err := hkdf.Expand(h, secret, string(info), length)
	if err != nil {
		panic("seal: HKDF-Expand-Label: " + err.Error())
	}
	return out
}

// keyGen is one key generation of one direction at one level: the AEAD
// and IV derived from a traffic secret, and the secret itself, from which
// the next generation derives.
type keyGen struct {
	aead   cipher.AEAD
	iv     [ivLen]byte
	secret []byte
}

func deriveKeyGen(s suite, secret []byte) keyGen {
	key := expandLabel(s.hash, secret, labelKey, nil, s.keyLen)
	block, err := aes.NewCipher(key)
	if err != nil {
		panic("seal: AES key of a derived length refused: " + err.Error())
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("seal: GCM refused a standard AES block: " + err.Error())
	}
	g := keyGen{aead: aead, secret: secret}
	copy(g.iv[:], expandLabel(s.hash, secret, labelIV, nil, ivLen))
	return g
}

// next derives the following key generation (key update): its secret is
// HKDF-Expand-Label(secret, "erpc ku", "", hash length), as QUIC's "quic ku".
func (g *keyGen) next(s suite) keyGen {
	return deriveKeyGen(s, expandLabel(s.hash, g.secret, labelUpdate, nil, len(g.secret)))
}

// nonce writes IV XOR the packet number (big-endian, left-padded to the
// IV's length) into n, as TLS 1.3 and QUIC do.
func (g *keyGen) nonce(n *[ivLen]byte, pn uint64) {
	*n = g.iv
	for i := 0; i < 8; i++ {
		n[ivLen-1-i] ^= byte(pn >> (8 * i))
	}
}

// newKeys checks a suite, secret and level and derives the first key
// generation. The secret is copied: crypto/tls reuses its event buffers.
func newKeys(id uint16, secret []byte, level Level) (suite, keyGen, error) {
	s, err := suiteByID(id)
	if err != nil {
		return suite{}, keyGen{}, err
	}
	if level >= levelCount {
		return suite{}, keyGen{}, ErrLevel
	}
	if len(secret) != s.hash().Size() {
		return suite{}, keyGen{}, ErrSecretLen
	}
	return s, deriveKeyGen(s, append([]byte(nil), secret...)), nil
}

// initialSalt keys the Initial secrets' HKDF-Extract, as QUIC's
// initial_salt does. Its value is erpc's own: the first 20 bytes of
// SHA-256("erpc-go initial salt v1").
var initialSalt = []byte{
	0xd6, 0x38, 0x80, 0x60, 0x4a, 0xc9, 0x8b, 0xb8, 0xf9, 0x78,
	0x11, 0x48, 0x4f, 0xef, 0xdc, 0x8f, 0x9b, 0x97, 0x8d, 0xba,
}

// ErrEarlyData refuses crypto/tls's 0-RTT level: erpc does not use it.
var ErrEarlyData = errors.New("seal: 0-RTT (early data) is not supported")

// LevelOf maps crypto/tls's QUIC encryption levels to erpc's; the
// early-data level has none.
func LevelOf(l tls.QUICEncryptionLevel) (Level, error) {
	switch l {
	case tls.QUICEncryptionLevelInitial:
		return LevelInitial, nil
	case tls.QUICEncryptionLevelHandshake:
		return LevelHandshake, nil
	case tls.QUICEncryptionLevelApplication:
		return LevelApplication, nil
	case tls.QUICEncryptionLevelEarly:
		return 0, ErrEarlyData
	}
	return 0, ErrLevel
}

// InitialSuite is the cipher suite of the Initial level's keys.
const InitialSuite = tls.TLS_AES_128_GCM_SHA256

// InitialSecrets derives the Initial level's traffic secrets from the ID
// the client chose for the first flight (the DestID of its first packets),
// as QUIC does from the client's destination connection ID: anyone can
// derive them, so they give no secrecy, but they catch corruption and
// blind injection and keep one code path for every packet. Use them with
// InitialSuite: the client seals with client and opens with server, the
// server the reverse.
func InitialSecrets(clientChosenID uint64) (client, server []byte) {
	var id [8]byte
	binary.LittleEndian.PutUint64(id[:], clientChosenID)
	prk, err := hkdf.Extract(sha256.New, id[:], initialSalt)
	if err != nil {
		panic("seal: HKDF-Extract: " + err.Error())
	}
	client = expandLabel(sha256.New, prk, labelClient, nil, sha256.Size)
	server = expandLabel(sha256.New, prk, labelServer, nil, sha256.Size)
	return client, server
}
