package proto

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/internal/cc"
	"github.com/erpc-go/erpc/internal/wire"
)

// Config sets an engine's limits and timers. The zero value of every field
// means "use the default"; withDefaults resolves them.
type Config struct {
	// Window is the number of concurrent requests per client session
	// (eRPC's kSessionReqWindow); further calls wait in a backlog. The server
	// caps what clients ask for at its own Window. Default 8.
	Window int
	// Credits is the number of client packets a session may have in flight,
	// about one bandwidth-delay product (eRPC's kSessionCredits). Default 32.
	Credits int
	// MaxMsgSize is the largest request or response accepted. Default 8 MiB.
	MaxMsgSize int
	// MaxPacketSize is the largest datagram sent or accepted, header
	// included. Default 1472 (a 1500-byte Ethernet MTU less IPv4 and UDP).
	MaxPacketSize int

	// MinRTO and MaxRTO bound the retransmission timeout derived from
	// measured RTT (RFC 6298 style). Defaults 1 ms and 200 ms.
	MinRTO, MaxRTO time.Duration
	// InitialRTO is used before the first RTT sample. Default 5 ms, eRPC's
	// fixed RTO.
	InitialRTO time.Duration
	// ReorderThreshold is how many later-sent packets must be answered
	// before an unanswered one is declared lost without waiting for the RTO
	// (fast retransmit). Reordering up to this depth is not mistaken for
	// loss. Default 3.
	ReorderThreshold int

	// FailureTimeout is how long a client waits without hearing from the
	// server, while it is waiting for something, before it declares the
	// session failed and fails its calls. Default 2 s.
	FailureTimeout time.Duration
	// ConnectRetry is the interval between connect attempts; the connect
	// fails after FailureTimeout unanswered. A server's retry
	// (wire.CodeRetry) with a new cookie is an answer: it gives the
	// connect another FailureTimeout, at most three times (so at most
	// 4 x FailureTimeout in all). Default 100 ms (eRPC's kSMTimeoutMs).
	ConnectRetry time.Duration
	// KeepaliveInterval is how often an idle client session pings its
	// server, so that both ends notice a dead peer. Default 5 s.
	KeepaliveInterval time.Duration
	// IdleTimeout is how long a server keeps a session it has not heard
	// from. It must exceed the clients' KeepaliveInterval. Default 30 s.
	IdleTimeout time.Duration

	// Paths is the number of paths (client source ports) a client session
	// spreads its packets over, SRD's multipath: each packet goes on the
	// path the session's path choice picks, and the driver sends it from
	// that path's port (Packet.Path). Default 1; at most 64.
	Paths int

	// CC configures the client sessions' congestion control (internal/cc;
	// a zero field takes its default). CC.RoundRobin sprays packets over
	// the paths in turn, blind to their delay: the baseline the path
	// choice is measured against.
	CC cc.Config
	// NoCongestionControl turns congestion control off: sessions send
	// their full credits at once and choose paths round robin (what the
	// engine did before it; the baseline the bypass is measured against).
	NoCongestionControl bool
	// Uncongested, if set, names the peers no network lies between (a
	// loopback address, a same-host transport): sessions to them run on
	// credits alone, as with NoCongestionControl. The only queue there is
	// the receiver's CPU, which credits already bound, and a delay-based
	// window taken for a network's throttles it (erpc-bench rate, 64 in
	// flight over loopback: 0.25x of credits alone).
	Uncongested func(netip.AddrPort) bool
	// Reliable, if set, names the peers the transport delivers to exactly
	// once and in order, reporting their death (PeerGone) instead of
	// losing datagrams: shared memory. Sessions to them take the lean
	// path, with no loss detection or RTT samples and a retransmission
	// timer of 100 ms at least, a safety net for a peer whose own side
	// drops what it sends; at-most-once, deadlines, cancellation and
	// failure detection stay.
	Reliable func(netip.AddrPort) bool

	// MaxSessions caps the server sessions of this engine. Default 65536.
	MaxSessions int
	// MaxHalfOpen caps the half-open server sessions: made by a connect
	// without a retry cookie and not yet confirmed by a packet carrying
	// the server's token. A connect can come from a forged source
	// address, so these are what a connect flood fills; at the cap, the
	// server answers further connects statelessly with a retry cookie
	// (wire.CodeRetry), and a client that echoes it gets its session
	// however many half-open ones there are, so a flood of forged
	// connects never locks a real client out, and costs at most
	// MaxHalfOpen sessions of about 0.5 KiB each with their share of the
	// tables, whatever the Window, since a session's slots are made only
	// when it is confirmed (about 0.5 MiB by default; TestConnectFlood
	// and TestHalfOpenMemoryWithWindow measure it).
	// A real client confirms one round trip after the connect-ack (with
	// its first request, or a ping if it has none), so its half-open
	// sessions number its connect rate times a round trip: the default
	// covers 100,000 connects/s at 10 ms; past it, clients pay one extra
	// round trip. Default 1024 (capped at MaxSessions).
	MaxHalfOpen int
	// HalfOpenTimeout is how long a server session may stay unconfirmed
	// after its connect (or the latest copy of it), whether half open or
	// made by a retry cookie: it then ends as idle (ErrServerIdle), and
	// its client, if real, hears a closing reset. A real client confirms within a
	// round trip and resends its confirmation at its RTO (at most
	// MaxRTO, 200 ms), so a second allows for several losses, and is
	// IdleTimeout/30. Default 1 s (at most IdleTimeout).
	HalfOpenTimeout time.Duration
	// CookieSeed seeds the keys of the retry cookies, which rotate every
	// 2 s. Tests set it for determinism; zero (the default) draws the
	// seed from crypto/rand. It is not derived from Random, whose output
	// the tokens show every client.
	CookieSeed [32]byte
	// NotServing makes the engine refuse every session a client asks for
	// (CodeNotServing): an endpoint that only makes calls.
	NotServing bool
	// MaxHeldRequests caps the requests a server holds at once (being
	// reassembled or waiting for their handler's response). A request that
	// would exceed it is refused with a NACK at once (NEBULA's fail-fast
	// shallow queue). Default 4096.
	MaxHeldRequests int
	// MaxHeldBytes caps the memory held for clients: the buffers of those
	// requests and the responses slots keep until their client has them
	// (at-most-once), counted by capacity. The receive memory is one pool
	// shared by all sessions (NEBULA), so it is sized by load, not by the
	// number of clients. Default 256 MiB.
	MaxHeldBytes int
	// PoolBytes caps the free message buffers the engine keeps for reuse.
	// Default 64 MiB.
	PoolBytes int
	// PoolIdle is how long a free buffer may stay unused in the pool
	// before the engine gives it back to the Go heap (pool_release.go).
	// Default 2 s; negative keeps buffers for good.
	PoolIdle time.Duration

	// Random returns random 64-bit values for session tokens (each draw's
	// other half starts a client session's sequence numbers) and path
	// challenge nonces. Tests set it for determinism. Default: a ChaCha8 generator seeded from crypto/rand.
	Random func() uint64
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Window, 8)
	def(&c.Credits, 32)
	def(&c.MaxMsgSize, 8<<20)
	def(&c.MaxPacketSize, 1472)
	defDur(&c.MinRTO, time.Millisecond)
	defDur(&c.MaxRTO, 200*time.Millisecond)
	defDur(&c.InitialRTO, 5*time.Millisecond)
	def(&c.ReorderThreshold, 3)
	defDur(&c.FailureTimeout, 2*time.Second)
	defDur(&c.ConnectRetry, 100*time.Millisecond)
	defDur(&c.KeepaliveInterval, 5*time.Second)
	defDur(&c.IdleTimeout, 30*time.Second)
	def(&c.MaxSessions, 1<<16)
	def(&c.MaxHalfOpen, 1024)
	c.MaxHalfOpen = min(c.MaxHalfOpen, c.MaxSessions)
	defDur(&c.HalfOpenTimeout, time.Second)
	c.HalfOpenTimeout = min(c.HalfOpenTimeout, c.IdleTimeout)
	def(&c.Paths, 1)
	c.Paths = min(c.Paths, 64)
	def(&c.MaxHeldRequests, 4096)
	def(&c.MaxHeldBytes, 256<<20)
	def(&c.PoolBytes, 64<<20)
	if c.PoolIdle == 0 {
		c.PoolIdle = defaultPoolIdle
	}
	c.Window = min(c.Window, 1<<15)
	c.Credits = min(c.Credits, 1<<15)
	c.MaxPacketSize = min(max(c.MaxPacketSize, wire.HeaderLen+wire.MinConnectData), wire.HeaderLen+0xFFFF)
	c.MaxRTO = max(c.MaxRTO, c.MinRTO)
	if c.Random == nil {
		var seed [32]byte
		_, _ = rand.Read(seed[:])
		c.Random = mrand.NewChaCha8(seed).Uint64
	}
	return c
}

// maxData is the largest data payload a packet carries under this config.
func (c *Config) maxData() int { return c.MaxPacketSize - wire.HeaderLen }

// seedRandom returns a deterministic Random function, for tests.
func seedRandom(seed uint64) func() uint64 {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return mrand.NewChaCha8(s).Uint64
}
