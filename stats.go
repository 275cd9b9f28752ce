package erpc

import "github.com/erpc-go/erpc/internal/proto"

// Stats is a snapshot of an endpoint's protocol state and counters.
type Stats struct {
	// Gauges.
	ClientSessions int // sessions this endpoint dialed, open or connecting
	ServerSessions int // sessions clients opened to this endpoint
	HalfOpen       int // of those, made without a retry cookie and not yet confirmed by their client
	PendingCalls   int // calls made and not yet completed
	BusySlots      int // client request slots sending, receiving or canceling
	CreditsInUse   int // client packet credits held by packets in flight
	HeldRequests   int // requests being received, handled or abandoned by their caller
	ParkedRequests int // of those, streams' exchanges parked until a stream has output: not counted against WithMaxHeldRequests
	HeldBytes      int // memory held for clients: those requests and saved responses, by capacity
	SavedBytes     int // the part of HeldBytes in responses kept until their client has them
	PooledBytes    int // free buffers kept for reuse

	// Counters since the endpoint opened.
	PacketsIn, PacketsOut uint64
	// PoolReleasedBytes counts free buffers the pool gave back to the Go
	// heap after they went unused for two seconds: receive memory
	// follows the load.
	PoolReleasedBytes  uint64
	ConnectsSent       uint64 // connects this endpoint's client sessions sent, resends included: 1 a dial when all goes well
	Retransmits        uint64 // client packets sent again
	SpuriousTimeouts   uint64 // timeouts whose given-up copy was answered after all: a stall, not a loss
	NacksSent          uint64 // requests refused at once: the server was full
	NacksReceived      uint64
	ResetsSent         uint64 // answers to packets for sessions this server does not have
	DropMalformed      uint64 // packets that failed to parse or contradicted themselves
	DropUnknownSession uint64 // packets for no session, with a wrong token, or from a wrong address
	DropStale          uint64 // valid packets that came too late to matter
	// A client whose address changes (NAT rebinding, a moved container)
	// keeps its sessions: the server challenges the new address and moves
	// the session there once the client answers from it.
	PathChallenges  uint64 // challenges sent to a client's new address
	Migrations      uint64 // server sessions moved to a client's new address
	DropUnvalidated uint64 // packets from a client's new address before it answered the challenge
	RetriesSent     uint64 // connects answered with a retry cookie instead of a session: a connect flood
	BadCookies      uint64 // connects whose retry cookie was not valid (forged, expired, another client's)
	SpentCookies    uint64 // connects whose retry cookie had made a session already (a late copy or a replay)
	HalfOpenReaped  uint64 // sessions ended because their client never confirmed them
	// MalformedMetadata counts metadata that did not parse or was over
	// MaxMetadataSize: requests' (the server refused them with
	// InvalidArgument, unrun) and responses' (the call failed with
	// DataLoss).
	MalformedMetadata uint64
	// DropWrongTag counts packets naming a session that came through
	// another TLS association than the one that made it: a peer that
	// learned another's session token. Dropped, unanswered.
	DropWrongTag uint64

	// TLS (WithTLS); zero without it. A protected packet that fails to
	// open is dropped, never answered.
	TLSHandshakes        uint64 // associations whose handshake completed
	TLSHandshakeFailures uint64 // handshakes that failed (an untrusted peer, a TLS alert)
	TLSOpenFailures      uint64 // protected packets that failed to authenticate, or under keys no longer held (an Initial or Handshake packet once its level is given up)
	TLSReplays           uint64 // protected packets seen already, or older than the replay window
	TLSPlaintextDropped  uint64 // plaintext erpc packets received on a TLS endpoint
	TLSUnknownAssoc      uint64 // protected packets for no association of this endpoint (an Initial that is no padded ClientHello start included)
	TLSKeyUpdates        uint64 // key updates started or followed

	// NacksLastSecond is the server's refusal rate: the NACKs it sent in
	// the last complete second.
	NacksLastSecond uint64
}

func statsFrom(s proto.Stats) Stats { return Stats(s) }
