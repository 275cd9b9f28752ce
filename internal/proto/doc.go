// Package proto is erpc-go's protocol engine: sessions, request slots,
// credits, reassembly, loss recovery, at-most-once execution, NACKs and
// failure detection, with no I/O of its own.
//
// # Sans-I/O
//
// An [Engine] never reads a clock, sleeps, starts a goroutine or touches a
// socket. Its driver hands it the current [Time] and received datagrams
// ([Engine.Receive]), runs due timers ([Engine.Tick]), drains [Event]s,
// sends what [Engine.Outgoing] returns, and sleeps until
// [Engine.NextDeadline] or the next datagram. The same engine therefore runs
// under the endpoint's event loop over UDP or shared memory, and under a
// fake clock on the simulated network of internal/simnet, where the tests
// replay thousands of seeded runs with loss, duplication, reordering and
// delay in seconds.
//
// # Protocol
//
// The wire protocol is eRPC's client-driven protocol: the server sends a
// packet only in reply to a client packet (the one exception is the
// best-effort notice that ends a session it closes or reaps), so it keeps
// no retransmission timers and no congestion window, only the sweeps that
// reap idle and half-open sessions. A request of N packets and a response
// of M packets cost N+M-1 packets each way:
//
//	client                          server
//	Req 0..N-2            ->        <- CR (credit return) for each
//	Req N-1 (completes)   ->        handler runs
//	                      <-        Resp 0 (or CR "pending" if the handler is slow)
//	RFR 1..M-1            ->        <- Resp 1..M-1
//
// Each client session has Window slots (8); slot i carries request numbers
// i, i+W, i+2W... and further calls wait in a backlog. A session may have
// Credits client packets (32, about one bandwidth-delay product) in flight;
// each reply returns one.
//
// At-most-once: a server slot keeps its last response until a request with
// a higher number arrives in that slot, which the client sends only after it
// has the whole response. A duplicate request gets the stored response; the
// handler never runs twice.
//
// # What differs from eRPC, and why
//
//   - Out of order is not loss (SRD). Both ends reassemble by packet index
//     and accept packets in any order and any number of times; eRPC dropped
//     every reordered packet, which rules out multipath spraying.
//   - Selective retransmission. A reply echoes the client's transmit
//     sequence number (wire.Header.TxSeq), so the client knows exactly which
//     copy was answered: RTT samples are exact even for retransmissions, and
//     a packet overtaken by ReorderThreshold (3) later-sent answered packets,
//     or by 9/8 RTT, is resent at once (fast retransmit). Only the missing
//     packets are resent. eRPC rolled the whole request back (Go-Back-N).
//   - The RTO comes from measured RTT (RFC 6298, floor MinRTO = 1 ms,
//     ceiling 200 ms, 5 ms before the first sample) with exponential backoff
//     per packet; eRPC used a fixed 5 ms. Like TCP's, the timer restarts
//     on every reply (it runs from the later of the packet's send time and
//     the session's last reply): with 64 KiB datagrams a burst of credits
//     takes a millisecond to drain at the receiver, late but not lost.
//     Replies carry the time the server
//     held the packet (wire.Header.HoldMicros), which the client subtracts,
//     so handler time does not inflate the RTO. An expiry resends the
//     oldest packet only and restarts the others' timers, doubling per
//     expiry in a row (TCP): a host that stalls a process for a few
//     milliseconds used to expire whole windows at once. A reply to the
//     copy the first expiry of a stretch gave up on proves the expiry
//     spurious (Eifel, Stats.SpuriousTimeouts) and raises the session's
//     floor to twice that reply's delay, which gives half its rise back
//     every 10 s of replies; same-host sessions
//     (Config.Uncongested) start at 20 ms, above the few milliseconds a
//     VM deschedules a process for (timeout.go).
//   - The lean path (SHRIMP's specialised path beside the general one).
//     Sessions to peers the transport delivers to once and in order
//     (Config.Reliable: shared memory) keep no loss detection and take no
//     RTT samples, and their timer is a 100 ms safety net for a peer whose
//     own side breaks the promise; credits, at-most-once, deadlines,
//     cancellation and failure detection are the general path's.
//   - A client session's per-packet work walks nothing: deadlines are
//     taken once per session per batch (Tick, NextDeadline), free slots
//     sit on a stack and the next slot to send in a stamped queue
//     (sendorder.go), in-flight records are found by binary search.
//     A call that finds no call waiting, a free slot and nothing queued
//     to send goes into its slot and out at once (fastSlot, startNow),
//     without the backlog and the send queue, which only calls held back
//     use; TestStartNowMatchesGeneralPath holds it to the general path's
//     bytes. The timer's walks visit only the slots not free (a bitmap),
//     and a slot is found from a request number by a mask when the
//     window is a power of two.
//   - What a call touches per session stays small, so that thousands of
//     sessions cost little more per call than one: a session and its
//     client or server half are one allocation; the first in-flight
//     records, the free-slot stack of a window up to 8 and the loss
//     marks of one path live inline; the timer heap keeps each entry's
//     deadline beside it and the indexes in an array by session number,
//     so a sift reads no session; and an idle session's timer moves out
//     to its keepalive at once rather than firing for nothing an RTO
//     after each call (BenchmarkRoundTripSessions: the engines'
//     round trip with 20,000 sessions against one).
//   - Slow handlers cost nothing on the wire. A request whose handler has not
//     answered by the end of the loop round gets a "pending" credit return;
//     the client holds no credit and retransmits nothing while it waits,
//     and probes with RFR 0 at the RTO, backing off to FailureTimeout/4. The
//     probe answers prove the server alive. The reply to the completing
//     packet keeps its place in the output queue, so replies never overtake
//     each other (which would look like loss).
//   - NEBULA's fail-fast: the server bounds the requests it holds
//     (MaxHeldRequests) and their bytes (MaxHeldBytes) across all sessions,
//     from one shared pool, and refuses a request that does not fit with a
//     NACK at once; the client's call fails with ErrOverloaded instead of
//     waiting in a deep queue. The application can refuse too (Reject).
//     A request the driver parks (Park: it waits for an event, as a
//     stream's exchange waits for output) is not work and does not count
//     against MaxHeldRequests; its message goes back to the pool, so it
//     holds no bytes either (a request parked for good would otherwise
//     keep up to a message's worth of MaxHeldBytes).
//     The responses slots keep for at-most-once count toward the same
//     bound, by the capacity of their buffers. Receive memory follows
//     load, not sessions: an idle server session costs about a kilobyte
//     (0.4 KiB before it is confirmed, its 80-byte slots coming at
//     confirmation, and 1.3 KiB once it has answered a 32-byte call,
//     measured by TestIdleSessionMemory), and there is no per-session RX-ring
//     reservation (eRPC's 128-sessions-per-endpoint limit).
//   - Cancellation reaches the server (Cancel, CancelAck): a partly received
//     request is freed, a running handler is told (EventRequestCanceled), and
//     the slot moves on only once the server confirms, so at-most-once holds
//     and the session stays usable.
//   - Session management runs in-band on the data socket, with an identity
//     no late packet, nor a forged one from an attacker that cannot read
//     the traffic, can revive or end (see the wire package doc for the
//     handshake and the threat model): each end picks a random token, and
//     every packet carries its destination's. A connect is deduplicated by
//     (client address, client session number, client token) and never
//     ends or changes another session; the first packet carrying the
//     server's new token confirms the session and ends an older one of the
//     same client number last heard at that address. A connect flood from
//     forged sources cannot lock clients out (SYN cookies, QUIC's Retry):
//     sessions made by a connect and not yet confirmed (half open) are
//     bounded apart (MaxHalfOpen, 1024) and reaped after HalfOpenTimeout
//     (1 s); beyond the bound the server answers a connect statelessly
//     with a retry cookie, a MAC over the client's address, port, number
//     and token and a 2 s time bucket, and accepts a connect that echoes a
//     valid one even then. A cookie makes one session (a later copy of its
//     connect counts as having none); the sessions cookies make are not
//     bounded apart, but are reaped unconfirmed after HalfOpenTimeout too,
//     and every unconfirmed session's ack asks the client to confirm at
//     once (FlagConfirm). A flood therefore holds at most MaxHalfOpen
//     sessions, about 0.5 KiB each with their share of the tables whatever
//     the Window (a session's slots are made at confirmation; 0.4 KiB
//     measured at Window 1024 by TestHalfOpenMemoryWithWindow, 525 KiB for
//     the default 1024 by TestConnectFlood; the full table of 65,536 used
//     to take 68 MiB), and costs no state or allocation past the bound.
//     It gains at most 13/8 in bytes: a 64-byte connect draws a 64-byte
//     ack and, when its session is reaped, a 40-byte closing reset, for
//     MaxHalfOpen connects per HalfOpenTimeout at most; past the bound a
//     72-byte retry (9/8). A real client pays one round trip more, and a
//     retry counts as hearing from the server: a new cookie gives the
//     connect another FailureTimeout, at most three times, so a client
//     whose round trip is under FailureTimeout connects through a flood,
//     and a server that only ever answers with retries still fails the
//     connect within 4 x FailureTimeout. Resets answer packets for
//     sessions the server does not have, echo them, and say for how long
//     it has had none, which proves that requests sent since never ran
//     (ErrNotExecuted: the driver may send them again); they never say it
//     of a session the server has, and the client believes only one that
//     echoes a packet still in flight. A client whose IP changes keeps its
//     session (QUIC's connection migration, migrate.go): the server
//     challenges the new address and moves the session there once the
//     client answers from it (an answer carries the server's token and
//     the nonce, so it also confirms a session still half open: a
//     half-open session leaves the reaper's list only by confirming, and a
//     repeated connect renews it at the list's back, so no accomplice can
//     stall the reaping of forged ones); until then that address's packets
//     are dropped, so a source forged to another IP can neither redirect
//     answers nor end the session, and no request runs twice. Calls
//     complete if the address stays put for several round trips at a time
//     (TestSimMigrationPace: with a change every 4 RTTs on average all do,
//     every 2 RTTs 97 %); faster, they may fail. (A forger on the client's
//     own IP that has read the server's token can: a session takes its
//     client's packets from any port of its IP.) Keepalive pings on idle
//     sessions, client failure detection (FailureTimeout without a packet
//     while waiting) that fails every pending call, server-side reaping of
//     sessions idle beyond IdleTimeout, and a best-effort notice to
//     clients when the server ends sessions itself. eRPC's failure
//     handling was disabled in its tree.
//   - Driver tags (ReceiveTagged, ConnectTagged): a driver that knows
//     more of a packet's origin than its address (the endpoint's TLS
//     association) tags it; a session is bound to the tag of the packet
//     that made it, drops packets under any other (Stats.DropWrongTag),
//     and every packet it sends carries its tag (Packet.Tag). So one
//     authenticated peer that learned another's token cannot reach its
//     session.
//   - Drain (Engine.Drain): a server about to shut down tells each
//     session's client at once (an unasked pong, CodeDraining) and flags
//     every packet it sends from then on (FlagDraining); the client
//     reports EventDraining once per session, so that a fleet client
//     sends new calls elsewhere within one trip. The session goes on: the
//     driver refuses new requests (as never run) and closes when the
//     held ones are answered.
//   - No TX DMA flush: the transports copy a datagram before Send returns
//     (the kernel, or the shared-memory ring), and a completed call's
//     packets still queued are withdrawn, so a request buffer goes back to
//     the caller the moment its call completes.
//
// # Buffers
//
// The client lends its request buffer and a response buffer for the life of
// a call; the response is written in place if the buffer is large enough,
// and nothing of the engine reads either once the call's EventResponse is
// out. The server holds requests in memory from one pool shared by all
// sessions (power-of-two classes, bounded by PoolBytes when free), valid
// until the handler responds. A response either points into the request
// (an echo: the slot takes the request's buffer over, no copy) or is
// memory the driver hands over, typically from Buffer; the slot keeps it
// until the client moves on, then it goes back to the pool (after the
// packets that point into it have been sent). So a steady stream of calls
// allocates nothing (TestRoundTripZeroAllocs), and every byte held for
// clients is counted and bounded (MaxHeldBytes, MaxHeldRequests,
// PoolBytes).
//
// Congestion control is package cc's, one Controller per client session:
// every new client packet leaves through one function (transmit), where
// its window and pacer decide, and every reply's RTT sample goes to it,
// with the path the packet took and the larger packet of the exchange:
// per-path state (base RTT, delay, the link-rate estimate under the delay
// target: the median of packet-pair gaps, capped by the session's own
// delivery rate; cc's "The link floor") lives in the Controller, so the
// engine threads only the path number. The server's part is the share mark (share.go): it counts each metered
// session's request bytes and marks the replies to those under their
// share of what arrives, which lets their windows grow while the others
// cut (cc's "The share mark").
package proto
