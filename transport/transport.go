// Package transport defines how an erpc-go endpoint moves datagrams, and
// holds the transports: udp (the default), tcp (length-prefixed frames
// over TCP, for networks that drop or throttle UDP), memnet (an in-process
// simulated network for tests and demos, like gRPC's bufconn) and shm
// (same host).
//
// The interface is batch-first and built for one event loop: the loop asks
// for everything that has arrived (Receive), hands over everything it wants
// sent (Send), and sleeps in Wait only when it has nothing to do. Any other
// goroutine may interrupt that sleep with Wake, which is how calls made from
// user goroutines reach the loop without a second goroutine per endpoint.
// transporttest holds the conformance suite every transport passes.
package transport

import (
	"errors"
	"net"
	"net/netip"
	"time"
)

// Transport moves datagrams for one endpoint. Receive, Send and Wait are
// called from the endpoint's event loop only; Wake and Close may be called
// from any goroutine.
type Transport interface {
	// Receive passes every datagram that has already arrived to fn, without
	// blocking, and returns how many it passed. data is valid only until fn
	// returns.
	Receive(fn func(from netip.AddrPort, data []byte)) (int, error)

	// Send sends the datagrams in order. Each is Head followed by Payload;
	// the bytes are copied before Send returns, so the caller may reuse the
	// buffers at once. A datagram the network would drop (no route, a full
	// buffer) is dropped silently, like the network would. A datagram over
	// MaxDatagram is not sent: Send sends the others and returns
	// ErrTooLarge. Any other error means the transport is unusable.
	Send(msgs []Message) error

	// Wait blocks until a datagram may have arrived, until deadline passes
	// (the zero Time means no deadline), or until Wake is called. It may
	// return early; the caller then simply tries Receive again. A Wake that
	// happens before Wait is entered makes Wait return at once.
	Wait(deadline time.Time) error

	// Wake makes a current or next Wait return.
	Wake()

	// LocalAddr is the address peers send to.
	LocalAddr() netip.AddrPort

	// MaxDatagram is the largest datagram the transport carries.
	MaxDatagram() int

	// Close releases the transport. A Wait in progress returns ErrClosed.
	Close() error
}

// PeerWatcher is implemented by transports that learn at once when a peer
// is gone, such as shm, which sees the peer's connection close when its
// process dies. The endpoint then fails that peer's sessions without waiting
// for the failure timeout.
type PeerWatcher interface {
	// GonePeers appends to dst the peers found gone since the last call. It
	// is called by the event loop after each Receive, so it must be cheap
	// when nothing happened.
	GonePeers(dst []netip.AddrPort) []netip.AddrPort
}

// PeerCreder is implemented by transports whose peers are processes of
// this host that the kernel vouches for, such as shm (SO_PEERCRED of the
// unix socket each connection was made on): PeerCreds gives the pid, uid
// and gid of the process at addr, as the kernel reported them when the
// connection was made, and false for an address with no connection. The
// endpoint reads it when a session opens, and hands it to handlers
// (erpc.PeerAuth's Local). It may be called from any goroutine.
type PeerCreder interface {
	PeerCreds(addr netip.AddrPort) (pid int32, uid, gid uint32, ok bool)
}

// Poller is implemented by transports that can tell whether Receive or
// GonePeers has work far more cheaply than by calling them, such as shm,
// where a check is a few loads of words in shared memory. A spinning event
// loop then polls with Poll between its turns instead of running a whole
// turn (a clock read, Receive, timers, Send) for every check.
type Poller interface {
	// Poll checks up to n times whether Receive or GonePeers has work,
	// calling idle between two checks; idle ends the poll by returning
	// true. Poll reports whether it found work (or the transport closed).
	// It is called by the event loop only.
	Poll(n int, idle func() bool) bool
}

// SyscallPoller marks a Poller whose checks are system calls, such as
// udp's, where a check receives (and keeps for the next Receive) a
// datagram: a check then costs about a microsecond rather than a few
// loads. Only a busy-polling loop, which has a core to itself, polls such
// a transport, and it reads the clock again after a poll that found work,
// since the poll may have lasted several microseconds and a datagram's
// arrival time feeds the session's RTT samples.
type SyscallPoller interface {
	Poller
	PollsBySyscall()
}

// Targeter is implemented by transports that know what a peer passes to
// erpc's Dial to reach them, with the scheme: "udp://127.0.0.1:31850",
// "mem://name", "shm:///path/to/socket". An endpoint's Target comes from
// it; "" means the transport cannot be dialed (a client-only one).
type Targeter interface {
	Target() string
}

// Pather is implemented by transports that can send from several local
// ports, so that one session's packets take several network paths (ECMP
// hashes the source port into the path; SRD's multipath): Message.Path
// picks the port, and replies to a port come back through the transport's
// Receive. Paths is how many there are, the transport's own address being
// path 0.
type Pather interface {
	Paths() int
}

// PacketSizer is implemented by transports that prefer a datagram size of
// their own: a network transport wants datagrams that fit the path MTU, a
// shared-memory one wants large ones. Without it, endpoints use 1472 bytes,
// which fits a 1500-byte Ethernet MTU.
type PacketSizer interface {
	PacketSize() int
}

// Message is one datagram to send: Head followed by Payload (which may be
// nil). Keeping them apart lets a transport gather them without copying
// (sendmmsg iovecs) and lets the engine point Payload into a message buffer.
type Message struct {
	To      netip.AddrPort
	Head    []byte
	Payload []byte
	// Path is the local path (source port) to send from: 0 is the
	// transport's own address; a transport with several paths (Pather)
	// has others. Transports with one path ignore it.
	Path uint8
}

// Len is the datagram's size.
func (m *Message) Len() int { return len(m.Head) + len(m.Payload) }

// ErrClosed is returned by a closed transport. It is net.ErrClosed, so
// errors.Is(err, net.ErrClosed) holds as with sockets.
var ErrClosed = net.ErrClosed

// ErrTooLarge is returned by Send for a datagram over MaxDatagram.
var ErrTooLarge = errors.New("transport: datagram larger than MaxDatagram")

// Reliable is an optional interface of a transport that delivers every
// datagram to a live peer exactly once and in order, and learns at once
// when a peer is gone (PeerWatcher), as shared memory and TCP do. Sessions over
// it take the engine's lean path: no loss detection or RTT samples, and
// only a 100 ms safety-net timer (a datagram is never lost, only its
// peer; the timer covers a peer whose own side breaks the promise).
type Reliable interface {
	Reliable() bool
}

// SameHoster is an optional interface of a transport whose peers are all on
// this host (shared memory): no network lies between them, so sessions
// over it need no congestion control (their credits bound the receiver).
type SameHoster interface {
	SameHost() bool
}
