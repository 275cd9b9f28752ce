// Package tcp is erpc-go's stream transport, for networks that drop or
// throttle UDP: the engine's datagrams travel as length-prefixed frames
// (a 4-byte big-endian length, then the datagram) over TCP connections.
// Endpoints use it through "tcp://host:port" (erpc.Listen, Server.Listen,
// erpc.Dial).
//
// One connection per pair of endpoints carries every session between
// them, rather than one per session: the engine multiplexes sessions
// above the transport anyway (every packet names its session), so a
// connection per session would buy no isolation the engine lacks and cost
// a handshake per session, a socket and reader per session, and a write
// system call per session per loop turn instead of one per peer. A loop
// turn's datagrams to one peer go out in one writev.
//
// Each side writes an 8-byte preface first (a magic and the framing's
// version) and checks the peer's before taking a frame, so a peer
// speaking something else (HTTP, gRPC, TLS, another version) is cut off
// on its first bytes, logged and counted (Stats.BadPreface); a frame
// longer than MaxDatagram cuts its connection off too (Stats.Malformed).
// Neither can make the transport panic or hold more than its bounds.
//
// Addresses. A listening transport is known to its peers by the address
// it listens on (LocalAddr), as over UDP, though it dials from ephemeral
// ports: its listening socket is its alone (no SO_REUSEPORT, so no other
// program, whatever its user, can listen on or bind the port while it
// does). Its preface claims the port it listens on, with a nonce secret
// to that connection, and the acceptor believes the claim only once it is
// proven (identity.go): it dials the claimed address (a short check
// connection, from the address the claimant dialed) and asks whether the
// transport listening there opened a connection to it with that nonce.
// Only the owner of the port can say yes, and only the two ends know the
// nonce, so another local program cannot pass for an endpoint. A claim
// that does not check out (a NAT between the two, a liar; counted in
// Stats.ClaimFailed), like the plain preface of a client-only transport,
// leaves the peer known by the connection's source address, and the
// answers go back on the connection it came by. This costs a round trip
// and a connection (the check) when a listening peer connects.
//
// One connection per pair, or two: when both ends of a pair dial each
// other at once, each sends on the one it dialed and hears the other on
// both, from its listening address. A second connection never closes the
// first: one reaching this side at another of its addresses (a server on
// 0.0.0.0 dialed at 127.0.0.1 and at 127.0.0.2 by one client) is known
// by its own source address, so what comes on it is answered on it, from
// the address the peer dialed.
//
// Memory. A connection whose peer has not proven itself holds a 256-byte
// read buffer (and its setup goroutine), for DialTimeout at most; once it
// carries frames its buffer grows to the largest frame it has read (at
// most MaxDatagram and 64 KiB), doubling while reads fill it. MaxConns
// caps the connections, so silent ones cost at most MaxConns times that
// (about 5 MiB of heap at the default 4096, 1.3 KiB each measured with
// 128 of them, and a goroutine stack each).
//
// Reliability. A live peer receives every datagram once and in order
// (TCP), and a connection that closes or resets is reported through
// GonePeers at once (transport.PeerWatcher), so the transport declares
// itself transport.Reliable: sessions over it take the engine's lean path
// (no loss detection, no RTT samples, a 100 ms safety-net timer) and, as
// on shared memory, skip erpc's congestion control, TCP having its own.
// The next datagram to a gone peer dials it again. A peer that vanishes
// without a FIN (power loss, a partition) leaves its connection open: its
// sessions then end by the engine's failure timeout, as over UDP. Frames
// sent while a connection is being set up wait in its outbox (16 MiB at
// most, like a socket buffer; beyond it a frame is dropped, counted in
// Stats.Dropped, and the safety-net timer sends it again).
//
// The loop never blocks, and on Linux nothing stands between it and the
// sockets (io_linux.go): Receive asks an epoll set of the transport's own
// which connections are readable and reads them with non-blocking reads,
// passing frames to the engine straight from each connection's read
// buffer; Send writes a run of datagrams with one non-blocking writev,
// and what the kernel does not take waits in the outbox until the socket
// is writable (EPOLLOUT); Wait parks on the epoll set in the Go netpoller.
// A goroutine per connection only sets it up (dial, prefaces, the check
// of a claim) and writes the frames sent meanwhile, with the loop already
// reading the connection: two ends that each wrote a large outbox before
// reading would wait on each other forever. Elsewhere, or built with the erpc_portable tag,
// each connection has a reader goroutine, which copies frames into an
// inbox that Receive takes whole (bounded: past 32 MiB the readers wait,
// and TCP's flow control holds the peers back), and a writer goroutine.
// Reader goroutines cost latency where the loop spins: their wake-ups wait
// for the scheduler's netpoll (see io_linux.go).
package tcp
