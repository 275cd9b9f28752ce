package proto

// Stats reports an engine's state and counters. The gauges come from a walk
// over all sessions, so Stats is for tests and metrics, not the hot path.
type Stats struct {
	// Gauges.
	ClientSessions int // open or connecting
	ServerSessions int
	HalfOpen       int // server sessions made without a cookie and not yet confirmed (Config.MaxHalfOpen)
	PendingCalls   int // accepted by StartCall and not yet completed
	BusySlots      int // client slots sending, receiving or canceling
	CreditsInUse   int // client credits held by packets in flight
	HeldRequests   int // server requests reassembling, handling or orphaned
	ParkedRequests int // the part of HeldRequests parked (Park): not counted against MaxHeldRequests
	HeldBytes      int // capacity of their buffers and of saved responses
	SavedBytes     int // the part of HeldBytes in responses kept for at-most-once
	PooledBytes    int // free buffers kept for reuse

	// Counters.
	PacketsIn, PacketsOut uint64
	// PoolReleasedBytes counts the free buffers the pool gave back to
	// the Go heap after they went unused for Config.PoolIdle.
	PoolReleasedBytes  uint64
	ConnectsSent       uint64 // client connects sent, first copies and resends
	Retransmits        uint64
	SpuriousTimeouts   uint64 // a timeout's given-up copy answered after all (see clientSide.rtoFloor)
	NacksSent          uint64
	NacksReceived      uint64
	ResetsSent         uint64
	DropMalformed      uint64 // failed to parse, or fields inconsistent
	DropUnknownSession uint64 // no session, wrong token or wrong address
	DropStale          uint64 // valid but late: a request or reply already settled
	// Connection migration (migrate.go).
	PathChallenges  uint64 // challenges sent to a client's new address
	Migrations      uint64 // server sessions moved to a new client address it proved
	DropUnvalidated uint64 // packets with a live session's token from an address not yet proved
	RetriesSent     uint64 // connects answered with a retry cookie instead of a session
	BadCookies      uint64 // connects whose cookie was not valid (forged, expired, another client's)
	SpentCookies    uint64 // connects whose valid cookie had made a session already (a late copy or a replay)
	HalfOpenReaped  uint64 // unconfirmed sessions ended, half open or cookie-proven (HalfOpenTimeout, or for a proven connect)
	// MalformedMetadata counts metadata blocks, of requests or responses,
	// that did not parse or were over wire.MaxMetadata. The engine only
	// carries the flag that says a message has them; its driver parses
	// them and counts here (CountMalformedMetadata).
	MalformedMetadata uint64
	// DropWrongTag counts packets naming a session (its number and
	// token) that came under another driver tag than the session's
	// (ReceiveTagged): another TLS association's.
	DropWrongTag uint64

	// Counted by the driver's TLS layer, not the engine (the endpoint's
	// WithTLS); zero without it.
	TLSHandshakes        uint64 // associations whose handshake completed, both sides
	TLSHandshakeFailures uint64 // handshakes that failed (an untrusted peer, a TLS alert)
	TLSOpenFailures      uint64 // protected packets that failed to authenticate, or under keys no longer held: dropped unanswered
	TLSReplays           uint64 // protected packets whose number was seen already or is older than the replay window
	TLSPlaintextDropped  uint64 // plaintext erpc packets received by a TLS endpoint
	TLSUnknownAssoc      uint64 // protected packets for no association of this endpoint
	TLSKeyUpdates        uint64 // key updates this endpoint started or followed

	// NacksLastSecond is how many NACKs the server sent in the last
	// complete second of engine time (StatsAt only).
	NacksLastSecond uint64
}

// CountMalformedMetadata counts a metadata block the driver could not use
// (see Stats.MalformedMetadata).
func (e *Engine) CountMalformedMetadata() { e.stats.MalformedMetadata++ }

// StatsAt is Stats with the rates that need the time.
func (e *Engine) StatsAt(now Time) Stats {
	st := e.Stats()
	st.NacksLastSecond = e.nacks.last(now)
	return st
}

// Stats returns the current gauges and counters.
func (e *Engine) Stats() Stats {
	st := e.stats
	st.ServerSessions = e.serverSessions
	st.HalfOpen = e.halfOpen.n
	st.HeldRequests = e.heldReqs
	st.ParkedRequests = e.parkedReqs
	st.HeldBytes = e.heldBytes
	st.SavedBytes = e.savedBytes
	st.PooledBytes = e.bufs.held
	for _, s := range e.sessions {
		if s == nil || s.c == nil {
			continue
		}
		cs := s.c
		st.ClientSessions++
		st.PendingCalls += cs.pending
		st.CreditsInUse += cs.credits - cs.avail
		for i := range cs.slots {
			if cs.slots[i].state != cslotFree {
				st.BusySlots++
			}
		}
	}
	return st
}
