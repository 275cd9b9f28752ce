// Package seal is erpc-go's protected packet format: the AEAD protection of
// every packet of an encrypted session, keyed from the TLS 1.3 traffic
// secrets crypto/tls's QUIC interface hands out per encryption level. It is
// sans-I/O (bytes in, bytes out), uses the standard library only, never
// panics on input, and allocates nothing per packet in steady state.
//
// It owns the outer header's layout, key and IV derivation, packet numbers
// and nonces, the AEAD's usage limit, key update, and the replay window.
// It does not own the handshake (which produces the secrets), nor routing by
// DestID, nor what the plaintext means: that is a complete erpc packet, its
// 40-byte header (internal/wire) included, so the erpc header is encrypted
// too.
//
// # Protected packet layout
//
// All multi-byte fields are little-endian, like internal/wire's.
//
//	off size field
//	 0   1   magic      0xE9 (erpc's plaintext packets start 0xE7)
//	 1   1   flags      bits 0-1 level: 0 Initial, 1 Handshake,
//	                    2 Application (3 is invalid); bit 2 key phase;
//	                    bits 3-7 zero (a packet with any set is dropped)
//	 2   8   destID     the receiver's ID for the session, to route the
//	                    packet before opening it
//	10   8   pn         packet number, at most 2^62-1
//	18   n   ciphertext the erpc packet, encrypted (same length)
//	18+n 16  tag        the AEAD tag
//
// The 18 header bytes are the AEAD's associated data: authenticated, not
// encrypted. Overhead is 34 bytes per packet (2.3 % of a 1472-byte UDP
// payload). The packet number is sent whole and in the clear: no header
// protection, so an observer sees packet numbers and key phases (traffic
// analysis is out of scope), and the receiver needs no reconstruction.
//
// # Keys
//
// For each level and direction, from a traffic secret S of the suite's hash
// length, with HKDF-Expand-Label (RFC 8446 §7.1) and the suite's hash:
//
//	key = HKDF-Expand-Label(S, "erpc key", "", key length)  16 or 32 bytes
//	iv  = HKDF-Expand-Label(S, "erpc iv",  "", 12)
//	S'  = HKDF-Expand-Label(S, "erpc ku",  "", hash length) next generation
//
// The labels are erpc's own, so erpc never uses a key another protocol
// derives from the same secret. Suites: TLS_AES_128_GCM_SHA256 and
// TLS_AES_256_GCM_SHA384. TLS_CHACHA20_POLY1305_SHA256 is refused
// (ErrChaCha20Unsupported): the standard library does not export
// ChaCha20-Poly1305. crypto/tls negotiates AES-GCM whenever both ends have
// AES-GCM hardware, or run with GODEBUG=fips140=on.
//
// The Initial level's secrets come from the client's chosen ID
// (InitialSecrets), as QUIC's come from its destination connection ID:
// HKDF-Extract with erpc's own salt, then "erpc client in" and "erpc server
// in"; suite TLS_AES_128_GCM_SHA256. They catch corruption and blind
// injection and keep one path for every packet; they are not secret.
//
// # Nonces and packet numbers
//
// nonce = iv XOR pn, pn big-endian and left-padded to 12 bytes, as TLS 1.3
// and QUIC. Each Sealer (one level, one direction) numbers its packets from
// 0, one more per packet, across key updates; a number is never reused, and
// a retransmission is a new packet with a new number.
//
// # Replay window
//
// An Opener accepts each packet number once, and only within WindowSize
// (4096) of the highest it has opened, so heavy reordering from multipath
// spraying passes. A packet is checked against the window before it is
// decrypted, and only one that authenticates is recorded: a forged packet
// number never moves the window.
//
// # Key update
//
// Sealer.UpdateDue turns true after 2^22 packets under one key, half QUIC's
// AES-GCM limit (2^23, RFC 9001 §6.6); the endpoint then calls UpdateKey.
// Seal updates by itself at the limit, so no key seals more. An update
// flips the key phase bit. The Opener holds the next generation's keys in
// advance: a packet with the other phase, numbered at or above the first
// packet of the current generation, is tried under them, and if it opens
// the Opener moves on. It keeps the previous generation's keys, for
// packets numbered below the current generation's first, until the window
// has moved a full window past that first packet (nothing they could open
// is accepted after that); then a packet under them is dropped as OldKey.
// The phase is one bit, so an Opener can only follow one update at a time:
// packets two generations ahead of it fail authentication (dropped, not
// fatal), and if none of the generation between ever arrives it can never
// catch up. So a sender must not update again before the peer has opened
// packets of its last update (QUIC's rule too); updates 2^22 packets apart
// keep it.
//
// # Cost
//
// A Sealer holds one key generation (about 0.9 KB of heap); an Opener three
// (current, next, previous) and the 512-byte window (about 2.4 KB).
//
// # Drops
//
// A packet that does not open is dropped, never answered, and counted by
// reason in Opener.Drops: BadHeader, WrongLevel, OldKey, TooOld, Replay,
// Auth (checked in that order).
package seal
