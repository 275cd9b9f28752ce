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
// Addresses. A listening transport dials its peers from its own listening
// port (SO_REUSEPORT on Linux, which lets one user's sockets share a port
// while the kernel keeps their 4-tuples apart), so a peer knows it by the
// address it listens on, as over UDP: the datagrams it sends come from
// LocalAddr, and the peer's answers and its own sessions to it share the
// one connection. A client-only transport (erpc.Dial's) dials from
// ephemeral ports, and a peer answers it on the connection it came by.
// Where the port cannot be shared (elsewhere than Linux, a 4-tuple still
// in TIME_WAIT, or the peer's own dial to us arriving first, as when two
// endpoints send to each other at once) a dial falls back to an ephemeral
// port, counted in Stats.ReDialPorts; in that last case the pair keeps two
// connections, each side sending on the one it dialed.
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
// A goroutine per connection only sets it up (dial, prefaces, and the
// frames sent meanwhile). Elsewhere, or built with the erpc_portable tag,
// each connection has a reader goroutine, which copies frames into an
// inbox that Receive takes whole (bounded: past 32 MiB the readers wait,
// and TCP's flow control holds the peers back), and a writer goroutine.
// Reader goroutines cost latency where the loop spins: their wake-ups wait
// for the scheduler's netpoll (see io_linux.go).
package tcp
