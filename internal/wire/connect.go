package wire

import (
	"encoding/binary"
	"errors"
)

// ConnectLen is the payload length of connect and connect-ack packets.
const ConnectLen = 24

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
type Connect struct {
	Session    uint32
	Window     uint16
	Credits    uint16
	MaxMsgSize uint32
	MaxData    uint16
	Token      uint32
}

// Put writes c into b[:ConnectLen].
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
	if len(b) != ConnectLen {
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
)
