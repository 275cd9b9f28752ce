// Package shm is erpc-go's same-host transport: datagrams between processes
// through shared memory, with no system call on the data path while both
// sides are busy. It needs Linux 5.1 or later (F_SEAL_FUTURE_WRITE);
// elsewhere, an older kernel included (Listen asks it once), Listen
// reports ErrNotSupported, saying why.
//
// An endpoint listens on a unix socket ("shm:///path/to/socket"). A peer
// connects to it; each side creates a memfd holding the single-producer,
// single-consumer ring it writes, seals it against resizing and against
// every later write but through its own mapping (so nobody can punch holes
// in it), and passes it over the socket with SCM_RIGHTS; the peer maps it
// read-only, and both close the descriptors, so nothing is ever visible in
// /dev/shm and the memory goes away with the last mapping. A datagram is one
// record in a ring, and its "ready" mark is a stamp in the record's own
// header, stored last: the consumer polls the line that holds the record's
// first bytes (ring.go). A datagram that finds the ring full waits in the
// connection's backlog, in order, until the peer frees room, so a live peer
// receives every datagram once and in order (transport.Reliable;
// backlog_linux.go) and sessions over shm take the engine's lean path.
//
// A peer is as untrusted as the network: it can write anything into the
// shared memory at any time, and it chooses what it passes in the handshake.
// So a side maps the peer's memfd only once the kernel vouches that its size
// cannot change and nobody can punch holes in it (F_SEAL_SHRINK, F_SEAL_GROW
// and F_SEAL_FUTURE_WRITE, which only a memfd can carry, and the size
// checked after them: a mapping that the peer could shrink would kill us
// with SIGBUS, and a punch in progress makes every fault on its pages wait
// until it is done, stalling the loop at an atomic load); it writes nothing
// into the peer's memory; it reads every size and offset in shared memory at
// most once, into a local that it validates (the ring size is taken from the
// handshake, a record's length, and the gap that puts a large datagram's
// body on a cache line, are read once per record, each side keeps its own
// ring position); and a garbled ring drops its connection (counted in
// Stats.Corrupt). See conn_linux.go for the handshake.
//
// What a local peer can and cannot do. Through its own connections it can
// send any datagrams (empty ones too: the engine drops and counts the
// malformed ones), garble its ring (the connection is dropped), stop reading
// (what we send it waits in its connection's backlog, at most 32 MiB of
// memory, buffers and queue entries counted, then is dropped), delay its own wake-ups, hold MaxPeers connections and
// handshakes, and make its own handshakes fail. It cannot make us map memory
// that can shrink under us, stall us through its memory (no hole can be
// punched in it, nor in ours), write into our memory, make a write of ours
// block, touch another connection's rings, make us drop a datagram to
// another connection (the backlogs hold 64 MiB together, two connections'
// worth; past that the largest backlog is dropped from, so several peers
// that stop reading can cause drops only to a connection whose backlog is
// larger than each of theirs; a reading peer's stays small, the engine's
// credits bounding each session to 32 packets in flight), hold the loop for
// more than one turn's budget per connection (Receive takes at most 256
// records and 256 KiB of ring from a connection per call, every record
// counted, an empty one as its 16-byte header; the budget is checked before
// each record, so only a turn's first record, with the pad before it, may
// take more), hand the engine a datagram longer than 256 KiB (a record
// longer than that, or a pad longer than a record, is a garbled ring),
// block a goroutine of ours through a descriptor it passes, or take
// another process's address.
//
// Closing a descriptor a peer passed (or a unix socket whose queue holds
// some: a bell, our end of a connection's socket, a refused or failed
// handshake's socket) can block for as long as the peer likes: the release
// of a descriptor in flight, a TCP socket with SO_LINGER and unsent data
// say, waits in the closing thread. So the loop, the accept loop, the
// watchers, the handshakes and Close never close one: they hand it to the
// transport's closer goroutine (closer_linux.go), and a close blocked by a
// peer may outlive Close while that peer lingers. Past a bound of
// descriptors waiting for the closer (4 x MaxPeers + 256) the transport
// accepts no connector and drops a connection whose peer keeps sending
// descriptors. After the handshake a connection's socket refuses
// descriptors (SO_PASSRIGHTS off, Linux 6.16 and later; on older kernels
// the watcher hands whatever arrives to the closer).
//
// Identity comes from the kernel, never from a claim. A connector knows
// the listener by the path it dialed. A listener knows a connector by the
// address the connector claims only if the kernel vouches for it, through
// SO_PEERCRED on the unix socket: the pid in a client's address must be
// the connector's; a listener's address must come with the path of a
// socket file of the connector's user that the connector's process listens
// on (checked by connecting to it once, and closing). Any other connector
// is known by an address the listener assigns (counted in
// Stats.Unverified), until it dials a path where the kernel says that
// connector's process (pid and start time) listens: then the connection
// takes that path's address (a second connection would be a duplicate). That check looks up a path the connector chose, which
// may lie on a file system that never answers (FUSE): it runs in a
// goroutine of its own, which the handshake waits for only until its
// deadline (then the handshake fails) and Close not at all; a check that
// hangs outlives them, blocking a thread, while the file system hangs. At
// most 4 checks are in flight per transport; a claim beyond is not
// vouched for. A listener address names whoever listens at its path,
// and that can change hands, so it is checked again whenever it may have:
// when the name changes in the directory of a claimed or dialed path (the
// listener, and the connector, watch it with inotify), when another connection comes to be known by
// the same address (the kernel vouching for it just then: only one socket
// is bound at a path, so the older one's process listens there no more,
// and one whose process still listens there is never displaced), and when
// Resolve names the path. A connection whose process no longer listens
// there loses the address and is known by an assigned one from then on
// (counted in Stats.Revoked). So a process speaks only as itself: its
// datagrams never arrive from another process's address, and datagrams to
// another process's address never reach it, whatever user runs the two;
// the socket file's permissions decide who may connect at all. (Beyond
// sight: renames of a claimed path's parent directories and mounts over
// them, which only those who control the path can make.)
//
// Waiting follows the shmipc-go protocol: the endpoint's loop spins (see
// erpc.WithSpin, and Options.Spin here), then sets a "sleeping" word of its
// own in each connection's shared header page (in its own memory: the
// number of this sleep, its epoch) and sleeps on its bell; a peer that
// publishes a record rings the bell only when it sees the word set to an
// epoch it has not rung yet (so a busy stream costs one atomic load per
// record, and neither side writes the other's memory). A peer can set only
// its own words, so it can delay only its own wake-ups. So while both
// loops poll (busy polling, or within the spin window) a round trip makes
// no system call at all: no bell is written, nothing is read from one,
// and the clock is the vDSO's (counted 2026-11-26: 0.008-0.015 system
// calls per round trip in erpc-bench's busy shm latency, all of them the
// Go runtime's own; TestPollingPeerNoBell counts the bells).
//
// The bell is a unix datagram socket of the transport's own, read through
// the Go netpoller (so a sleeping loop holds no thread). For each
// connection each side creates a fresh datagram socket connected to its own
// bell and passes it to the peer in the handshake (checked there to be a
// unix datagram socket); a side rings its peer by sending one byte on the
// socket the peer passed, with MSG_DONTWAIT. That flag belongs to the call,
// not to the descriptor, so whatever the peer does to the socket it passed
// (file flags, buffers, a queue it never reads) the ring returns at once:
// EAGAIN means a wake-up is already pending, and every error is ignored. No
// write to a descriptor that a peer provided can block. A woken Wait drains
// every pending datagram (one recvmmsg) and returns, even if nothing is
// ready: a ring may be for an earlier sleep (the peer loaded that epoch
// before we woke). The bell is bound to an
// abstract address, which any process of the network namespace can send
// to: that costs the loop spurious wake-ups, nothing else. Sleeping sets
// one word per connection, a store each.
//
// Options.MaxPeers (default DefaultMaxPeers) caps the connections of a
// transport plus the handshakes in progress on its listening socket; a
// connection beyond it is answered "full" at once and closed (the
// connecting side's Resolve fails with ErrFull), and a handshake not done
// within 5 seconds is dropped with its socket and descriptors.
//
// The unix socket stays open for the life of the connection: when the peer
// process dies, even by SIGKILL, the kernel closes it, the transport sees
// the end of file at once and reports the peer through GonePeers
// (transport.PeerWatcher), so the endpoint fails its calls with Unavailable
// without waiting for the failure timeout.
//
// Addresses: the engine identifies peers by netip.AddrPort, so every
// transport has a synthetic IPv6 address in fd65:7368::/32 (a unique local
// address, never routed). A listening transport's address is derived from
// the absolute path of its socket (fd65:7368:0:: plus 80 bits of its
// SHA-256), so a server restarted on the same path keeps its address and
// sessions to it reconnect; a client-only transport's address is
// fd65:7368:1:: with its process's pid (32 bits), the low 32 bits of its
// process's start time in clock ticks (which a listener checks, so a
// process that gets a dead client's pid later cannot take its address;
// identity_linux.go) and 16 bits of a counter of the process's. An
// address a listener assigns is fd65:7368:2:: with the connector's pid
// (as the listener's pid namespace sees it) and a counter of the
// listener's: unique for its life. The port is always 1.
// Resolve("/path/to/socket") connects (or reuses the connection) and
// returns the address of a listener on that path.
package shm

import (
	"errors"
	"time"
)

// ErrNotSupported is returned where shared-memory transport is not available.
var ErrNotSupported = errors.New("shm: shared-memory transport is not supported on this platform")

// ErrFull is returned (wrapped) by Resolve when the endpoint listening on
// the socket already has Options.MaxPeers connections and handshakes.
var ErrFull = errors.New("shm: the listener has its maximum number of peers (MaxPeers)")

// DefaultMaxPeers is the default of Options.MaxPeers.
const DefaultMaxPeers = 1024

// DefaultRingSize is the size of each direction's ring in a connection.
// The engine keeps at most credits x packet size (32 x 64 KiB = 2 MiB) in
// flight per session, so a ring of twice that holds a session's window
// with room to spare; a datagram that finds its ring full waits in the
// connection's backlog. A larger ring only spreads the same traffic over
// more memory: the receiver's copy out of an 8 MiB ring ran slower than out
// of a 4 MiB one, whose lines come back to the caches sooner
// (docs/benchmarks/shm.md, 2026-11-26). The memory is allocated only as
// it is touched.
const DefaultRingSize = 4 << 20

// Options tunes a shared-memory transport; the zero value is the default.
type Options struct {
	// RingSize is the byte size of the rings in the connections this
	// transport opens (the connecting side chooses the size of both; a
	// listener makes its own ring, the one it writes, the larger of that
	// and its own RingSize, so that every ring carries its writer's
	// MaxDatagram). It is rounded up to a power of two between 64 KiB and
	// 1 GiB (512 MiB on 32-bit systems). Default DefaultRingSize.
	// MaxDatagram is RingSize/16, at most 256 KiB.
	RingSize int

	// Spin is how long Wait polls the rings before it sleeps on the bell.
	// Default 0: the endpoint's loop already spins (erpc.WithSpin) before it
	// calls Wait. Negative: Wait never sleeps (busy polling), it returns
	// only for data, its deadline, Wake or Close.
	Spin time.Duration

	// MaxPeers caps the connections of this transport (open ones, and
	// closed ones whose memory GonePeers has not released yet) plus the
	// handshakes in progress on its listening socket. A peer that connects
	// beyond it is refused at once: its Resolve fails with ErrFull.
	// Connections this transport opens itself (Resolve) count, but are
	// never refused. A handshake that does not complete within 5 seconds
	// is dropped. Zero or less means DefaultMaxPeers (1024).
	MaxPeers int
}

// Stats counts what a transport did.
type Stats struct {
	Peers      int    // connections currently open
	Dropped    uint64 // datagrams dropped: no connection to the address, or a backlog past its bound
	Backlogged uint64 // datagrams that found the ring full and waited for room
	Corrupt    uint64 // connections dropped because the peer garbled its ring
	Unverified uint64 // connectors whose claimed address the kernel did not vouch for (known by one the listener assigned)
	Revoked    uint64 // connections that lost a listener address: their process no longer listened at its path
}
