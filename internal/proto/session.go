package proto

import (
	"net/netip"

	"github.com/erpc-go/erpc/internal/wire"
)

// session is one end of a session. A session is either a client session
// (c != nil: this engine sends requests) or a server session (s != nil).
type session struct {
	num       uint32 // local number: index in Engine.sessions
	remote    uint32 // the peer's number for this session
	token     uint32 // ours, random: every packet addressed to us carries it
	peerToken uint32 // the peer's: every packet we send carries it
	peer      netip.AddrPort
	up        bool   // handshake done
	tag       uint64 // the driver's tag (ReceiveTagged): packets under another are not this session's

	// Negotiated at connect.
	window     int
	windowPow2 bool // window is a power of two: slotOf masks
	dpp        int  // data bytes per packet
	maxMsg     int

	lastHeard Time // last valid packet from the peer

	deadline Time // timer heap key (client sessions)
	stale    bool // in Engine.stale

	c *clientSide
	s *serverSide
}

func (s *session) id() SessionID { return makeSessionID(s.num, s.token) }

// header returns a header addressed to the peer's side of s.
func (s *session) header(t wire.Type, reqNum uint64) wire.Header {
	return wire.Header{Type: t, Session: s.remote, Token: s.peerToken, ReqNum: reqNum}
}

// accepts reports whether a packet from addr with header h is addressed to
// this incarnation of s: its number, its token and its peer's address. A
// server session takes its client's packets from any port of the client's
// host: a client that sprays over several paths sends each from a source
// port of its own (its replies go back there). A packet with the right
// token from another IP is the client moving, or a forgery: the server
// proves the address before it follows (migrate.go).
func (s *session) accepts(from netip.AddrPort, h *wire.Header) bool {
	if s.token != h.Token {
		return false
	}
	if s.s != nil {
		return s.peer.Addr() == from.Addr()
	}
	return s.peer == from
}

// slotOf is the slot that carries request number reqNum, reqNum modulo
// the window: by a mask when the window is a power of two (the default
// 8), for a 64-bit division costs more than the rest of a slot lookup.
func (s *session) slotOf(reqNum uint64) int {
	if s.windowPow2 {
		return int(reqNum & uint64(s.window-1))
	}
	return int(reqNum % uint64(s.window))
}

// negotiate applies the peer's connect parameters on top of ours.
func (s *session) negotiate(cfg *Config, peer *wire.Connect) (credits int) {
	s.window = min(cfg.Window, int(peer.Window))
	s.windowPow2 = s.window > 0 && s.window&(s.window-1) == 0
	s.dpp = min(cfg.maxData(), int(peer.MaxData))
	s.maxMsg = min(cfg.MaxMsgSize, int(peer.MaxMsgSize))
	return min(cfg.Credits, int(peer.Credits))
}

// offer is the connect payload describing what this engine accepts.
func offer(cfg *Config, num uint32, window, credits int) wire.Connect {
	return wire.Connect{
		Session:    num,
		Window:     uint16(window),
		Credits:    uint16(credits),
		MaxMsgSize: uint32(cfg.MaxMsgSize),
		MaxData:    uint16(cfg.maxData()),
	}
}

// dataRange is where packet idx of a size-byte message sits in it.
func dataRange(idx uint32, size, dpp int) (lo, hi int) {
	lo = int(idx) * dpp
	return lo, min(lo+dpp, size)
}

// validData checks that a data packet fits its message: index in range and
// payload exactly as long as that packet's share.
func validData(h *wire.Header, payloadLen, dpp, maxMsg int) bool {
	size := int(h.MsgSize)
	if size > maxMsg || h.PktIndex >= uint32(wire.NumPackets(size, dpp)) {
		return false
	}
	lo, hi := dataRange(h.PktIndex, size, dpp)
	return payloadLen == hi-lo
}
