package proto

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/erpc-go/erpc/internal/wire"
)

// SessionID names a session of one engine: its local number and its token,
// so that an ID kept after its session ended never reaches a newer session
// that reuses the number.
type SessionID uint64

func makeSessionID(num, token uint32) SessionID { return SessionID(uint64(token)<<32 | uint64(num)) }

// Num is the session's local number.
func (id SessionID) Num() uint32 { return uint32(id) }

func (id SessionID) token() uint32 { return uint32(id >> 32) }

// CallID names a client call of one engine. IDs are never reused.
type CallID uint64

// Errors reported by the engine, in EventResponse, EventSessionDown or as
// return values. They are distinct so the API layer can map each to a
// status; their texts carry no package prefix because that layer adds its
// own.
var (
	ErrNoSession      = errors.New("no such session (closed or failed)")
	ErrSessionClosed  = errors.New("session closed")
	ErrPeerTimeout    = errors.New("peer unreachable: no answer within the failure timeout")
	ErrPeerGone       = errors.New("peer gone: its connection closed")
	ErrSessionReset   = errors.New("session reset by peer (peer restarted or forgot the session)")
	ErrServerClosed   = errors.New("server closed the session (it shut down or found the session idle)")
	ErrConnectTimeout = errors.New("connect timed out: no answer from the server")
	ErrTooMany        = errors.New("server refused the session: too many sessions")
	ErrRefused        = errors.New("server refused the session parameters")
	ErrNotServing     = errors.New("server refused the session: the endpoint serves no handlers")
	ErrTLSRequired    = errors.New("server refused the session: this server requires TLS (dial with erpc.WithTLS)")
	ErrServerIdle     = errors.New("session idle beyond the idle timeout")
	ErrOverloaded     = errors.New("server overloaded: request refused (NACK)")
	ErrCanceled       = errors.New("call canceled")
	ErrMsgTooLarge    = errors.New("message larger than the session's maximum")
	ErrStaleRequest   = errors.New("request handle already answered")
	ErrRequestGone    = errors.New("request was canceled or its session ended; response dropped")
	// ErrNotExecuted wraps the session's error for calls that provably
	// never ran: still in the backlog, never sent, or sent only after the
	// server's session had ended (a reset says since when). They are safe
	// to send again on a new session. It comes only with the session's
	// end: a refusal of one call (a NACK, a request over the session's
	// limit) leaves the session open and does not carry it.
	ErrNotExecuted = errors.New("the request never reached a live server")
)

// SizeError reports a message over a limit: the session's (which is the
// smaller of the two ends' maximums) or the server's. It matches
// ErrMsgTooLarge with errors.Is.
type SizeError struct {
	Size    int  // the message's size; 0 if the peer did not say
	Max     int  // the limit; 0 if the peer did not say
	Request bool // a request (else a response)
}

func (e *SizeError) Error() string {
	what := "response"
	if e.Request {
		what = "request"
	}
	if e.Max == 0 {
		return what + " larger than the server accepts"
	}
	return fmt.Sprintf("%s of %d bytes is larger than the session's maximum of %d bytes", what, e.Size, e.Max)
}

func (e *SizeError) Is(target error) bool { return target == ErrMsgTooLarge }

// EventType tells what an Event reports.
type EventType uint8

// Event types.
const (
	// EventSessionUp: a session opened by Connect is ready. Session.
	EventSessionUp EventType = iota + 1
	// EventSessionDown: a session ended; every call on it has already
	// completed with an error. Session, Peer, Err (ErrSessionClosed after
	// a local Close).
	EventSessionDown
	// EventSessionAccepted: a client opened a session to this engine.
	// Session, Peer.
	EventSessionAccepted
	// EventRequest: a request arrived whole. Session, Req. The engine waits
	// for Respond or Reject on Req.
	EventRequest
	// EventRequestCanceled: a request being handled will not be answered:
	// the client canceled it or the session ended. Req; Respond on it is
	// still allowed and releases it.
	EventRequestCanceled
	// EventResponse: a call completed, exactly once per call StartCall
	// accepted. Session, Call, Tag, Data (the response, in the caller's
	// buffer when it was large enough), Status, Err. The engine has dropped
	// every reference to the call's buffers.
	EventResponse
	// EventDraining: the server of a client session said it is shutting
	// down (wire.FlagDraining): it refuses new requests, as never run,
	// and ends the session once those it holds are answered. Once per
	// session. Session, Peer.
	EventDraining
)

var eventNames = [...]string{"invalid", "session-up", "session-down", "session-accepted",
	"request", "request-canceled", "response", "draining"}

func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "unknown"
}

// Event is one thing the engine reports to its driver.
type Event struct {
	Type    EventType
	Status  uint8 // response status (the server's code), EventResponse
	Session SessionID
	Call    CallID
	Tag     any
	Req     ReqHandle
	Peer    netip.AddrPort
	Data    []byte
	Err     error
	// Retransmits is how many packets of the call were sent again
	// (EventResponse).
	Retransmits int
	// Meta: the response's Data starts with its metadata blocks
	// (wire.FlagMetadata on its packets; see wire.ParseResponseMetadata),
	// which the engine neither reads nor strips (EventResponse).
	Meta bool
	// EventSessionDown: whether the session was a server's, and whether
	// it had come up (a dialed session that never connected had not).
	Server, WasUp bool
	// SessionTag is the session's driver tag (ReceiveTagged,
	// ConnectTagged): its TLS association, say (EventSessionUp,
	// EventSessionAccepted, EventSessionDown).
	SessionTag uint64
}

// Packet is a datagram for the driver to send: the header (with a small
// inline payload for session management) followed by Payload, which points
// into a message buffer, so sending it copies the data once, into the
// kernel or the simulated wire.
type Packet struct {
	To      netip.AddrPort
	Payload []byte
	// Path is the client path (source port) to send the packet from:
	// 0, the endpoint's own address, unless the session sprays its
	// packets over several paths (Config.Paths). Server replies are
	// always 0: they go back to the port the client sent from.
	Path uint8
	// Tag is the driver's tag (ReceiveTagged) of the session the packet
	// belongs to, or of the packet it answers: the driver sends it the
	// way that tag says (under that TLS association, say).
	Tag     uint64
	headLen uint8
	head    [wire.HeaderLen + wire.ConnectLen]byte
}

// Head returns the header bytes (and any inline payload).
func (p *Packet) Head() []byte { return p.head[:p.headLen] }

// Len is the datagram's total size.
func (p *Packet) Len() int { return int(p.headLen) + len(p.Payload) }

// AppendTo appends the whole datagram to b.
func (p *Packet) AppendTo(b []byte) []byte { return append(append(b, p.Head()...), p.Payload...) }
