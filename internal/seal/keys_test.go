package seal

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/hex"
	"hash"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExpandLabelRFC9001 proves expandLabel right with QUIC's published
// derivations (RFC 9001 Appendix A.1 and A.5), by passing it QUIC's labels.
func TestExpandLabelRFC9001(t *testing.T) {
	salt := unhex(t, "38762cf7f55934b34d179ae6a4c80cadccbb7f0a")
	prk, err := hkdf.Extract(sha256.New, unhex(t, "8394c8f03e515708"), salt)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		secret      []byte
		label, want string
		length      int
	}{
		{prk, "client in", "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea", 32},
		{prk, "server in", "3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b", 32},
	}
	client := unhex(t, cases[0].want)
	server := unhex(t, cases[1].want)
	chacha := unhex(t, "9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b")
	cases = append(cases, []struct {
		secret      []byte
		label, want string
		length      int
	}{
		{client, "quic key", "1f369613dd76d5467730efcbe3b1a22d", 16},
		{client, "quic iv", "fa044b2f42a3fd3b46fb255c", 12},
		{client, "quic hp", "9f50449e04a0e810283a1e9933adedd2", 16},
		{server, "quic key", "cf3a5331653c364c88f0f379b6067e37", 16},
		{server, "quic iv", "0ac1493ca1905853b0bba03e", 12},
		{chacha, "quic key", "c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8", 32},
		{chacha, "quic iv", "e0459b3474bdd0e44a41c144", 12},
		{chacha, "quic ku", "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9", 32},
	}...)
	for _, c := range cases {
		got := expandLabel(sha256.New, c.secret, c.label, nil, c.length)
		if !bytes.Equal(got, unhex(t, c.want)) {
			t.Errorf("%q: got %x, want %s", c.label, got, c.want)
		}
	}
}

// TestExpandLabelRFC8448 checks the TLS 1.3 traffic key derivation of RFC
// 8448 §3 (server handshake traffic secret to write key and IV).
func TestExpandLabelRFC8448(t *testing.T) {
	secret := unhex(t, "b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38")
	if got := expandLabel(sha256.New, secret, "key", nil, 16); !bytes.Equal(got, unhex(t, "3fce516009c21727d0f2e4e86ee403bc")) {
		t.Errorf("key: %x", got)
	}
	if got := expandLabel(sha256.New, secret, "iv", nil, 12); !bytes.Equal(got, unhex(t, "5d313eb2671276ee13000b30")) {
		t.Errorf("iv: %x", got)
	}
}

// TestNonceRFC9001 checks nonce construction against RFC 9001 A.5: the IV
// XOR packet number 654360564.
func TestNonceRFC9001(t *testing.T) {
	var g keyGen
	copy(g.iv[:], unhex(t, "e0459b3474bdd0e44a41c144"))
	var n [ivLen]byte
	g.nonce(&n, 654360564)
	if !bytes.Equal(n[:], unhex(t, "e0459b3474bdd0e46d417eb0")) {
		t.Fatalf("nonce %x", n)
	}
}

// refExpand is RFC 5869's HKDF-Expand written out with crypto/hmac, as an
// independent check of the SHA-384 path (no published vector uses it).
func refExpand(h func() hash.Hash, prk, info []byte, n int) []byte {
	var out, prev []byte
	for i := byte(1); len(out) < n; i++ {
		m := hmac.New(h, prk)
		m.Write(prev)
		m.Write(info)
		m.Write([]byte{i})
		prev = m.Sum(nil)
		out = append(out, prev...)
	}
	return out[:n]
}

func TestExpandLabelSHA384(t *testing.T) {
	secret := testSecret(t, tls.TLS_AES_256_GCM_SHA384, 7)
	for _, c := range []struct {
		label string
		n     int
	}{{labelKey, 32}, {labelIV, 12}, {labelUpdate, 48}} {
		info := append([]byte{0, byte(c.n), byte(6 + len(c.label))}, "tls13 "+c.label+"\x00"...)
		want := refExpand(sha512.New384, secret, info, c.n)
		if got := expandLabel(sha512.New384, secret, c.label, nil, c.n); !bytes.Equal(got, want) {
			t.Errorf("%q: got %x, want %x", c.label, got, want)
		}
	}
}

func TestInitialSalt(t *testing.T) {
	sum := sha256.Sum256([]byte("erpc-go initial salt v1"))
	if !bytes.Equal(initialSalt, sum[:20]) {
		t.Fatalf("initialSalt is not the documented derivation")
	}
}

// TestInitialSecrets: both ends derive the same secrets from the ID, the
// two directions differ, another ID gives others, and they key a pair.
func TestInitialSecrets(t *testing.T) {
	c1, s1 := InitialSecrets(42)
	c2, s2 := InitialSecrets(42)
	c3, _ := InitialSecrets(43)
	if !bytes.Equal(c1, c2) || !bytes.Equal(s1, s2) {
		t.Fatal("InitialSecrets is not deterministic")
	}
	if bytes.Equal(c1, s1) || bytes.Equal(c1, c3) {
		t.Fatal("Initial secrets collide across directions or IDs")
	}
	client, err := NewSealer(InitialSuite, c1, LevelInitial)
	if err != nil {
		t.Fatal(err)
	}
	server, err := NewOpener(InitialSuite, c2, LevelInitial)
	if err != nil {
		t.Fatal(err)
	}
	mustOpen(t, server, client.Seal(nil, 42, payloadFor(0, 100)))
	wrong, _ := NewOpener(InitialSuite, s1, LevelInitial)
	mustDrop(t, wrong, client.Seal(nil, 42, payloadFor(1, 100)), ErrAuth)
}

// TestSuiteRefusals: ChaCha20-Poly1305 and unknown suites, a secret of the
// wrong length and an invalid level are refused, by both constructors.
func TestSuiteRefusals(t *testing.T) {
	s32 := make([]byte, 32)
	for _, c := range []struct {
		suite  uint16
		secret []byte
		level  Level
		want   error
	}{
		{tls.TLS_CHACHA20_POLY1305_SHA256, s32, LevelApplication, ErrChaCha20Unsupported},
		{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, s32, LevelApplication, ErrUnknownSuite},
		{tls.TLS_AES_128_GCM_SHA256, s32[:31], LevelApplication, ErrSecretLen},
		{tls.TLS_AES_256_GCM_SHA384, s32, LevelApplication, ErrSecretLen},
		{tls.TLS_AES_128_GCM_SHA256, s32, Level(3), ErrLevel},
	} {
		if _, err := NewSealer(c.suite, c.secret, c.level); err != c.want {
			t.Errorf("NewSealer(%#x, %d bytes, %d): %v, want %v", c.suite, len(c.secret), c.level, err, c.want)
		}
		if _, err := NewOpener(c.suite, c.secret, c.level); err != c.want {
			t.Errorf("NewOpener(%#x, %d bytes, %d): %v, want %v", c.suite, len(c.secret), c.level, err, c.want)
		}
	}
	if SuiteSupported(tls.TLS_CHACHA20_POLY1305_SHA256) != ErrChaCha20Unsupported || SuiteSupported(tls.TLS_AES_256_GCM_SHA384) != nil {
		t.Fatal("SuiteSupported disagrees with the constructors")
	}
}

// TestSecretCopied: the constructors copy the secret (crypto/tls reuses
// its event buffers), so overwriting it later changes nothing.
func TestSecretCopied(t *testing.T) {
	secret := testSecret(t, tls.TLS_AES_128_GCM_SHA256, 1)
	s, _ := NewSealer(tls.TLS_AES_128_GCM_SHA256, secret, LevelApplication)
	o, _ := NewOpener(tls.TLS_AES_128_GCM_SHA256, secret, LevelApplication)
	clear(secret)
	s.UpdateKey()
	mustOpen(t, o, s.Seal(nil, 1, payloadFor(0, 10)))
	if o.Generation() != 1 {
		t.Fatal("opener did not follow the update")
	}
}
