package wire

import (
	"encoding/binary"
	"errors"
)

// ConnectLen is the payload length of connect and connect-ack packets
// without a cookie; one with a cookie is ConnectLen+CookieLen long.
const ConnectLen = 24

// CookieLen is the length of a retry cookie (see [CodeRetry]).
const CookieLen = 8

// Cookie is a retry cookie: a server under a connect flood answers a connect
// with it instead of keeping state, and the client echoes it to prove it
// receives at its source address. Only the server that minted it can read
// it; to the client it is opaque.
type Cookie [CookieLen]byte

// ErrConnect is returned for a connect payload whose values are unusable.
var ErrConnect = errors.New("wire: invalid connect parameters")

// Connect is the payload of TypeConnect (client's offer) and TypeConnectAck
// (server's answer). Both sides then use the minimum of each limit.
//
//	off size field
//	 0   4   session     the sender's own session number
//	 4   2   window      concurrent requests per session
//	 6   2   credits     packets in flight per session
//	 8   4   maxMsgSize  largest message the sender accepts
//	12   2   maxData     largest packet data (bytes after the header) accepted
//	14   2   reserved    zero
//	16   4   token       connect-ack: the server session's token, which every
//	                     later client packet carries; connect: zero
//	20   4   reserved    zero
//	24   8   cookie      optional (see [CodeRetry]): in a retry connect-ack,
//	                     the cookie to echo; in a connect, the cookie echoed
//
// The cookie is absent (a 24-byte payload) unless a server under pressure
// asked for it, so peers that predate it still parse every connect they get.
type Connect struct {
	Session    uint32
	Window     uint16
	Credits    uint16
	MaxMsgSize uint32
	MaxData    uint16
	Token      uint32
	// Cookie is valid if HasCookie: the payload was ConnectLen+CookieLen
	// bytes long. Put leaves it out; its bytes follow the fixed part as
	// they are (the engine sends them from where it keeps them).
	Cookie    Cookie
	HasCookie bool
}

// Len is c's payload length: ConnectLen, plus CookieLen with a cookie.
func (c *Connect) Len() int {
	if c.HasCookie {
		return ConnectLen + CookieLen
	}
	return ConnectLen
}

// Put writes the fixed part of c into b[:ConnectLen]; a cookie, if any, goes
// in the CookieLen bytes after it.
func (c *Connect) Put(b []byte) {
	_ = b[ConnectLen-1]
	binary.LittleEndian.PutUint32(b[0:], c.Session)
	binary.LittleEndian.PutUint16(b[4:], c.Window)
	binary.LittleEndian.PutUint16(b[6:], c.Credits)
	binary.LittleEndian.PutUint32(b[8:], c.MaxMsgSize)
	binary.LittleEndian.PutUint16(b[12:], c.MaxData)
	binary.LittleEndian.PutUint16(b[14:], 0)
	binary.LittleEndian.PutUint32(b[16:], c.Token)
	binary.LittleEndian.PutUint32(b[20:], 0)
}

// MinConnectData is the smallest per-packet data size a peer may offer.
const MinConnectData = 64

// Parse decodes a connect payload and rejects values no session could use.
// A connect-ack that accepts a session must also carry a nonzero token; the
// engine checks that, since a refusal carries none.
func (c *Connect) Parse(b []byte) error {
	switch len(b) {
	case ConnectLen:
		c.Cookie, c.HasCookie = Cookie{}, false
	case ConnectLen + CookieLen:
		c.Cookie, c.HasCookie = Cookie(b[ConnectLen:]), true
	default:
		return ErrLength
	}
	c.Session = binary.LittleEndian.Uint32(b[0:])
	c.Window = binary.LittleEndian.Uint16(b[4:])
	c.Credits = binary.LittleEndian.Uint16(b[6:])
	c.MaxMsgSize = binary.LittleEndian.Uint32(b[8:])
	c.MaxData = binary.LittleEndian.Uint16(b[12:])
	c.Token = binary.LittleEndian.Uint32(b[16:])
	if c.Window == 0 || c.Credits == 0 || c.MaxData < MinConnectData {
		return ErrConnect
	}
	return nil
}

// Codes carried in Header.Code by the session-management and NACK packets.
// Response packets carry the application's status there instead.
const (
	CodeOK uint8 = iota
	// Connect-ack refusals.
	CodeTooManySessions
	CodeBadParams
	// NACK reasons.
	CodeServerFull  // no room for another request (NEBULA fail-fast)
	CodeQueueFull   // the application's queue refused it (see Engine.Reject)
	CodeMsgTooLarge // the request is larger than the server accepts
	// Reset reasons.
	CodeUnknownSession
	CodeStaleToken
	// CodeServerClosing: the server ends the session (it is closing, or
	// the session was idle too long); sent unasked, since 0.
	CodeServerClosing
	// CodeNotServing refuses a connect: the endpoint serves no handlers
	// (it only makes calls).
	CodeNotServing
	// CodeRetry answers a connect without accepting or refusing it: the
	// server is under a connect flood and keeps no state for a connect
	// until its source proves it receives there. The connect-ack carries
	// the server's limits and a [Cookie]; the client sends its connect
	// again with the cookie echoed, which the server accepts even under
	// pressure (like QUIC's Retry and TCP's SYN cookies).
	CodeRetry
	// CodeTLSRequired refuses a plaintext connect: the server's endpoint
	// speaks TLS only (erpc.WithTLS). Sent in the clear, as the connect
	// came; it can only make a dial fail.
	CodeTLSRequired
	// CodeTLSUnsupported answers a protected (TLS) packet at a plaintext
	// endpoint: a connect-ack in the clear whose ReqNum echoes the
	// protected packet's destination ID (the client's chosen one, see
	// internal/seal). The client fails that dial only: never falls back
	// to plaintext.
	CodeTLSUnsupported
	// CodeDraining marks the pong a shutting-down server sends unasked
	// to each of its sessions' clients (with FlagDraining): it answers no
	// ping.
	CodeDraining
)
