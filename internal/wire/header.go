package wire

import (
	"encoding/binary"
	"errors"
	"time"
)

// Header sizes and identity bytes.
const (
	HeaderLen = 40   // bytes of every packet's fixed header
	Magic     = 0xE7 // first byte of every packet
	Version   = 2    // wire version spoken by this package
)

// Errors returned by the parsers. They are values, so returning one never
// allocates.
var (
	ErrShort   = errors.New("wire: packet shorter than its header")
	ErrMagic   = errors.New("wire: bad magic byte")
	ErrVersion = errors.New("wire: unsupported version")
	ErrType    = errors.New("wire: unknown packet type")
	ErrLength  = errors.New("wire: payload length does not fit the packet type")
)

// Type is the packet type.
type Type uint8

// Packet types. Zero is invalid so that a zeroed buffer never parses.
const (
	TypeReq        Type = 1 + iota // request data (client)
	TypeRFR                        // request for response packet PktIndex (client)
	TypeCR                         // credit return for request packet PktIndex (server)
	TypeResp                       // response data (server); Code is the status
	TypeNack                       // request refused, server full (server); Code is the reason
	TypeCancel                     // abandon request ReqNum (client)
	TypeCancelAck                  // the server has dropped request ReqNum (server)
	TypeConnect                    // open a session; payload is [Connect] (client)
	TypeConnectAck                 // session accepted or refused; payload is [Connect] (server)
	TypeDisconnect                 // close a session (client)
	TypePing                       // liveness probe (client)
	TypePong                       // answer to a ping (server)
	TypeReset                      // unknown session or stale token (server)
	// TypePathChallenge asks the client whether a new address is its own:
	// ReqNum is a random nonce; Token is zero, so the challenge does not
	// tell whoever is at that address the client's token (server).
	TypePathChallenge
	// TypePathResponse answers a challenge from the address challenged:
	// ReqNum echoes the nonce and MsgSize carries the client's token (client).
	TypePathResponse
	typeEnd
)

var typeNames = [...]string{"invalid", "req", "rfr", "cr", "resp", "nack", "cancel",
	"cancel-ack", "connect", "connect-ack", "disconnect", "ping", "pong", "reset",
	"path-challenge", "path-response"}

func (t Type) String() string {
	if t < typeEnd {
		return typeNames[t]
	}
	return "unknown"
}

// FromClient reports whether packets of this type travel client to server.
func (t Type) FromClient() bool {
	switch t {
	case TypeReq, TypeRFR, TypeCancel, TypeConnect, TypeDisconnect, TypePing, TypePathResponse:
		return true
	}
	return false
}

// payloadRule says what payload a packet type may carry.
func (t Type) payloadRule() (min, max int) {
	switch t {
	case TypeReq, TypeResp:
		return 0, 1 << 16
	case TypeConnect, TypeConnectAck:
		return ConnectLen, ConnectLen + CookieLen
	}
	return 0, 0
}

// Flags is a bit set carried in every header.
type Flags uint8

// Flag bits.
const (
	// FlagPending marks a CR that answers a packet of a request the server has
	// fully received but not yet answered: the handler is still running.
	FlagPending Flags = 1 << iota
	// FlagDeadline marks a request packet whose HoldMicros field carries
	// the call's remaining time, encoded by EncodeTimeout.
	FlagDeadline
	// FlagMetadata marks a request whose message starts with a metadata
	// block (see AppendMetadata), or a response whose message (or error
	// payload) starts with two, its headers and its trailers (see
	// AppendResponseMetadata); without it a request or response carries
	// none. Every packet of the message carries it.
	FlagMetadata
	// FlagUnderShare marks a reply (CR or response) to a session that
	// gets less than its share of the request data arriving at the
	// server: its congestion control may grow while the others cut.
	FlagUnderShare
	// FlagConfirm marks a connect-ack for a session the server has not
	// seen confirmed (half open, or made by a retry cookie): it ends the
	// session soon unless a packet carrying the new token arrives, so a
	// client with nothing to send pings at once.
	FlagConfirm
	// FlagDraining marks a server packet of an endpoint that is shutting
	// down: it refuses new requests (as never run) and will end its
	// sessions once the ones it holds are answered, so a client sends
	// new calls elsewhere. Every server packet carries it from the start
	// of the shutdown on; a pong with CodeDraining, sent unasked to each
	// session at that start, says it before any other packet would.
	FlagDraining
)

// HoldSaturated in Header.HoldMicros means "held too long to measure".
const HoldSaturated = 0xFFFF

// Header is the parsed form of the fixed packet header.
type Header struct {
	Type       Type
	Flags      Flags
	Code       uint8
	Path       uint8
	HoldMicros uint16
	Session    uint32
	Token      uint32
	ReqType    uint32
	MsgSize    uint32
	PktIndex   uint32
	TxSeq      uint32
	ReqNum     uint64
}

// Put writes h into b[:HeaderLen]. It panics if b is shorter, like a slice
// expression would: callers size their buffers.
func (h *Header) Put(b []byte) {
	_ = b[HeaderLen-1]
	b[0] = Magic
	b[1] = Version
	b[2] = byte(h.Type)
	b[3] = byte(h.Flags)
	b[4] = h.Code
	b[5] = h.Path
	binary.LittleEndian.PutUint16(b[6:], h.HoldMicros)
	binary.LittleEndian.PutUint32(b[8:], h.Session)
	binary.LittleEndian.PutUint32(b[12:], h.Token)
	binary.LittleEndian.PutUint32(b[16:], h.ReqType)
	binary.LittleEndian.PutUint32(b[20:], h.MsgSize)
	binary.LittleEndian.PutUint32(b[24:], h.PktIndex)
	binary.LittleEndian.PutUint32(b[28:], h.TxSeq)
	binary.LittleEndian.PutUint64(b[32:], h.ReqNum)
}

// AppendHeader appends the encoded header to b.
func AppendHeader(b []byte, h *Header) []byte {
	n := len(b)
	b = append(b, make([]byte, HeaderLen)...)
	h.Put(b[n:])
	return b
}

// Parse decodes the header at the start of pkt into h and returns the payload
// that follows it. It checks magic, version, type and that the payload length
// fits the type; the meaning of the fields is checked by the engine.
func (h *Header) Parse(pkt []byte) (payload []byte, err error) {
	if len(pkt) < HeaderLen {
		return nil, ErrShort
	}
	if pkt[0] != Magic {
		return nil, ErrMagic
	}
	if pkt[1] != Version {
		return nil, ErrVersion
	}
	t := Type(pkt[2])
	if t == 0 || t >= typeEnd {
		return nil, ErrType
	}
	payload = pkt[HeaderLen:]
	if lo, hi := t.payloadRule(); len(payload) < lo || len(payload) > hi {
		return nil, ErrLength
	}
	h.Type = t
	h.Flags = Flags(pkt[3])
	h.Code = pkt[4]
	h.Path = pkt[5]
	h.HoldMicros = binary.LittleEndian.Uint16(pkt[6:])
	h.Session = binary.LittleEndian.Uint32(pkt[8:])
	h.Token = binary.LittleEndian.Uint32(pkt[12:])
	h.ReqType = binary.LittleEndian.Uint32(pkt[16:])
	h.MsgSize = binary.LittleEndian.Uint32(pkt[20:])
	h.PktIndex = binary.LittleEndian.Uint32(pkt[24:])
	h.TxSeq = binary.LittleEndian.Uint32(pkt[28:])
	h.ReqNum = binary.LittleEndian.Uint64(pkt[32:])
	return payload, nil
}

// NumPackets is the number of packets a message of size bytes takes when each
// packet carries at most dataPerPkt bytes. An empty message still takes one.
func NumPackets(size, dataPerPkt int) int {
	if size <= dataPerPkt {
		return 1
	}
	return (size + dataPerPkt - 1) / dataPerPkt
}

// Timeouts travel in 16 bits as a small float: the top 5 bits are an
// exponent e, the low 11 bits a mantissa m, and the value is m << e µs. It
// covers 1 µs to about 51 days, exact below 2 ms and within 0.1 % above.
const (
	timeoutMantBits = 11
	timeoutMantMask = 1<<timeoutMantBits - 1
	timeoutMaxExp   = 1<<(16-timeoutMantBits) - 1
)

// EncodeTimeout encodes d, rounding down so that the receiver's deadline
// is never later than the sender's. A d below 1 µs encodes as 0 (already
// expired); a d beyond the range saturates at the largest value.
func EncodeTimeout(d time.Duration) uint16 {
	us := uint64(max(d/time.Microsecond, 0))
	e := 0
	for us > timeoutMantMask {
		if e == timeoutMaxExp {
			return 0xFFFF
		}
		us >>= 1
		e++
	}
	return uint16(e<<timeoutMantBits) | uint16(us)
}

// DecodeTimeout is the inverse of EncodeTimeout.
func DecodeTimeout(v uint16) time.Duration {
	m, e := uint64(v&timeoutMantMask), uint(v>>timeoutMantBits)
	return time.Duration(m<<e) * time.Microsecond
}
