// Package shm is erpc-go's same-host transport: datagrams between processes
// through shared memory, with no system call on the data path while both
// sides are busy. It needs Linux; elsewhere Listen reports ErrNotSupported.
//
// An endpoint listens on a unix socket ("shm:///path/to/socket"). A peer
// connects to it, creates a memfd holding one single-producer,
// single-consumer ring per direction, and passes it over the socket with
// SCM_RIGHTS; both map it and close the descriptor, so nothing is ever
// visible in /dev/shm and the memory goes away with the last mapping. A
// datagram is one record in a ring: its bytes and its "ready" mark (the
// producer's tail) are published by one atomic store.
//
// Waiting follows the shmipc-go protocol: the endpoint's loop spins (see
// erpc.WithSpin, and Options.Spin here), then sets a "sleeping" word in a
// small shared page of its own and sleeps on its bell, an eventfd passed to
// every peer and read through the Go netpoller (so a sleeping loop holds no
// thread); a peer that publishes a record rings the bell only when it sees
// the word set.
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
// sessions to it reconnect; a client-only transport gets a random address in
// fd65:7368:1::/48. The port is always 1. Peers learn each other's address
// in the handshake; Resolve("/path/to/socket") connects (or reuses the
// connection) and returns the server's address.
package shm

import (
	"errors"
	"time"
)

// ErrNotSupported is returned where shared-memory transport is not available.
var ErrNotSupported = errors.New("shm: shared-memory transport is not supported on this platform")

// DefaultRingSize is the size of each direction's ring in a connection.
// The engine keeps at most credits x packet size (32 x 64 KiB = 2 MiB) in
// flight per session, so rings well above that rarely fill; a datagram that
// finds its ring full is dropped, like on a network, and retransmitted.
// The memory is allocated only as it is touched.
const DefaultRingSize = 8 << 20

// Options tunes a shared-memory transport; the zero value is the default.
type Options struct {
	// RingSize is the byte size of each direction's ring in the connections
	// this transport opens (the connecting side chooses). It is rounded up
	// to a power of two between 64 KiB and 1 GiB (512 MiB on 32-bit systems). Default DefaultRingSize.
	// MaxDatagram is RingSize/16, at most 256 KiB.
	RingSize int

	// Spin is how long Wait polls the rings before it sleeps on the bell.
	// Default 0: the endpoint's loop already spins (erpc.WithSpin) before it
	// calls Wait. Negative: Wait never sleeps (busy polling), it returns
	// only for data, its deadline, Wake or Close.
	Spin time.Duration
}

// Stats counts what a transport did.
type Stats struct {
	Peers   int    // connections currently open
	Dropped uint64 // datagrams dropped: ring full, or no connection to the address
}
