package erpc

import (
	"crypto/tls"
	"log/slog"
	"runtime"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/transport"
)

// Option configures an Endpoint. Every option has a zero-value default.
// A numeric option's value out of its range (a negative count, say, or a
// packet too small for a connect) fails Listen, Server.Listen and Dial
// with InvalidArgument naming the option and its range.
type Option func(*options)

type options struct {
	logger    *slog.Logger
	transport transport.Transport
	busyPoll  bool
	spin      time.Duration // the spin window's floor
	spinMax   time.Duration // and its ceiling: equal for a fixed window
	workers   int           // fixed background workers; 0: elastic
	queue     int
	fixedPool bool // WithDispatch or WithSLO: a fixed pool even without WithWorkers
	dispatch  Dispatch
	slo       time.Duration // WithSLO's target, and its mean service time (0: measured)
	sloMean   time.Duration
	engine    proto.Config
	sockBuf   int
	resolver  HostResolver // nil: net.DefaultResolver
	paths     int
	stall     time.Duration // a loop held this long by one handler is logged
	handoff   time.Duration // an inline handler running this long loses the loop (WithHandoff)
	// udpNetwork is the UDP socket's network (udp.Options.Network): set
	// by erpc.Dial to the family of the addresses it dials.
	udpNetwork string

	clientInterceptors []UnaryClientInterceptor
	streamInterceptors []StreamClientInterceptor // stream_icpt.go
	stats              StatsHandler

	tlsConfig *tls.Config // WithTLS (tls_options.go)
	insecure  bool        // Insecure
	tlsSet    bool        // WithTLS was given (with a nil config, checkTLS refuses it)

	fleet fleetOptions // NewClient's (client_options.go)
}

func defaultOptions() options {
	return options{spin: minSpin, spinMax: maxSpin, stall: time.Second, handoff: defaultHandoff}
}

func (o *options) resolve() {
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.fixedPool && o.workers <= 0 {
		o.workers = runtime.GOMAXPROCS(0)
	}
	switch {
	case o.workers <= 0 || o.queue > 0:
	case o.slo > 0:
		o.queue = sloQueueCap // WithSLO bounds it long before, by time
	default:
		o.queue = 2 * o.workers // a running and a waiting request per worker
	}
}

// WithLogger sets where the endpoint logs (handler panics, dropped
// responses). Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithTransport makes the endpoint use t instead of opening one from the
// address given to Listen (which is then ignored). The endpoint closes t.
func WithTransport(t transport.Transport) Option { return func(o *options) { o.transport = t } }

// WithBusyPoll makes the event loop spin on a goroutine locked to its OS
// thread, with non-blocking system calls, for up to spin after its last
// work before it parks: the lowest latency, at the cost of a core while it
// spins. spin < 0 never parks. Give each busy-polling endpoint its own core.
// Where GOMAXPROCS is 1 the loop cannot have a core to itself without
// starving the goroutines that call it, so it stays unlocked and yields the
// processor on every idle turn.
func WithBusyPoll(spin time.Duration) Option {
	return func(o *options) { o.busyPoll, o.spin, o.spinMax = true, spin, spin }
}

// WithSpin fixes how long the default (netpoller) event loop keeps
// polling, yielding the processor between polls, after its last work
// before it sleeps in the netpoller; d < 0 never sleeps, 0 sleeps at once.
// A reply that comes within the spin skips two thread wake-ups, which cost
// tens to hundreds of microseconds on a virtual machine.
//
// By default the spin adapts between 50 µs and 1 ms: it doubles when the
// loop slept and a datagram woke it within the current spin's length (a
// spin twice as long would have caught it: replies that take a while,
// multi-hop work such as consensus, a peer that itself slept) and halves
// after a sleep longer than 1 ms (spinning would have cost more than the
// wake-up it saves). A sleep that the process's own goroutines ended (a
// Background handler's response, a new call) leaves it: a spin does not
// shorten the application's time. Traffic whose gaps are mostly a
// millisecond or more keeps the window near 50 µs.
//
// While polling loops keep every processor busy (GOMAXPROCS 1 makes that
// easy), Go polls its netpoller only from the system monitor, so the rest
// of the process's network I/O, including other endpoints that sleep,
// waits until the loops stop polling: a process that serves other sockets
// with GOMAXPROCS 1 should fix a short spin.
func WithSpin(d time.Duration) Option { return func(o *options) { o.spin, o.spinMax = d, d } }

// WithWorkers runs background handlers on a fixed pool of n goroutines
// fed by one bounded queue (NEBULA's single queue; see WithQueueDepth),
// instead of the default, which runs each background request at once on a
// goroutine of its own (reused), bounded only by WithMaxHeldRequests. A
// fixed pool suits CPU-bound handlers: more of them running at once than
// there are cores only adds queueing inside the Go scheduler.
func WithWorkers(n int) Option { return func(o *options) { o.workers = n } }

// WithQueueDepth bounds the requests waiting in the fixed worker pool's
// shared queue (WithWorkers). A request that finds it full is refused at
// once (the client gets ResourceExhausted) instead of waiting behind work
// that would make it late (NEBULA); one that finds a worker free never
// waits and is always admitted, whatever the depth. Default 2 x workers,
// or 4096 with WithSLO, which bounds waiting by time long before.
func WithQueueDepth(n int) Option { return func(o *options) { o.queue = n } }

// WithWindow sets the number of concurrent requests per session (default
// 8, at most 32768); further calls wait in the session's backlog.
func WithWindow(n int) Option { return func(o *options) { o.engine.Window = n } }

// WithCredits sets the packets a session may have in flight (default 32,
// about one bandwidth-delay product; at most 32768).
func WithCredits(n int) Option { return func(o *options) { o.engine.Credits = n } }

// WithMaxMessageSize sets the largest request or response (default 8 MiB;
// at most 4294967295 bytes, 4 GiB less one, as the wire carries a
// message's size in 32 bits).
// Metadata counts toward it: a request's metadata, and a response's
// headers and trailers, travel in the same message, so a response that
// fits alone but not with its headers fails with Internal naming both
// sizes.
func WithMaxMessageSize(n int) Option { return func(o *options) { o.engine.MaxMsgSize = n } }

// WithMaxPacketSize sets the largest datagram, header included (default
// 1472, for a 1500-byte MTU; raise it on jumbo-frame networks): 104 (a
// 40-byte header and a connect's 64 bytes) to 65575 (a 16-bit data
// length), and never above what the transport carries. Of a packet over
// 65512 bytes, 65512 are used: 65472 bytes of data, a whole number of
// cache lines, which the copies of a large message want.
func WithMaxPacketSize(n int) Option { return func(o *options) { o.engine.MaxPacketSize = n } }

// WithFailureTimeout sets how long a client waits without hearing from a
// server before it fails the session's calls with Unavailable (default 2 s).
func WithFailureTimeout(d time.Duration) Option {
	return func(o *options) { o.engine.FailureTimeout = d }
}

// WithKeepalive sets how often idle client sessions ping their server
// (default 5 s; a session waiting for answers, a slow call's or an idle
// stream's, asks for them at least as often instead), and how long a
// server keeps a session it hears nothing from (default 30 s; it must
// exceed the clients' interval). Zero keeps a default.
func WithKeepalive(interval, idle time.Duration) Option {
	return func(o *options) { o.engine.KeepaliveInterval, o.engine.IdleTimeout = interval, idle }
}

// WithMaxHeldRequests bounds the requests a server holds at once across
// all sessions, being received or handled (default 4096). Beyond it new
// requests are refused at once with ResourceExhausted. The exchanges a
// client with streams open parks at the server (two a session, answered
// when a stream has output: Stats.ParkedRequests) wait for an event, not
// for work, and do not count: idle streams never make a server refuse
// calls. Nor do they hold bytes (WithMaxHeldBytes): the server takes the
// frames they carry into the streams' windows before it parks them.
func WithMaxHeldRequests(n int) Option { return func(o *options) { o.engine.MaxHeldRequests = n } }

// WithMaxHeldBytes bounds the memory a server holds for its clients: the
// requests being received or handled, and the responses it keeps until
// their client has them (which is what lets it answer a retransmission
// without running the handler again), counted by the capacity of their
// buffers. Default 256 MiB. Beyond it new requests are refused at once
// with ResourceExhausted. Streams' own buffers are not counted: their
// windows bound them (StreamWindow).
func WithMaxHeldBytes(n int) Option { return func(o *options) { o.engine.MaxHeldBytes = n } }

// WithStallLog sets how long one handler that is not handed off (OnLoop,
// or any with WithHandoff(-1)), continuation or Post function may hold the
// event loop before the endpoint logs it (once per stall, with the
// method's name): every other call of the endpoint waits meanwhile.
// Default 1 s; a negative value turns the log off.
func WithStallLog(d time.Duration) Option { return func(o *options) { o.stall = d } }

// WithPaths makes the endpoint's client sessions spread their packets over
// k paths (SRD's multipath): the endpoint sends from k local ports, a
// network that hashes the UDP 5-tuple onto several paths (ECMP) carries
// each port's packets on a path of its own, and each session keeps an RTT
// per path, prefers the faster ones, moves a retransmission to another
// path and avoids a path that keeps timing out. Replies come back on the
// port, so on the path, their request went out on. Default 1; at most 64.
// It applies to the transports erpc opens (UDP, and mem for tests); a
// transport given with WithTransport brings its own paths
// (transport.Pather, udp.Options.Paths).
func WithPaths(k int) Option { return func(o *options) { o.paths = k } }

// WithResolver sets how the endpoint's Dial looks up the addresses of a
// host name (default net.DefaultResolver, which reads /etc/hosts and
// asks DNS): a *net.Resolver of its own, or any service discovery.
func WithResolver(r HostResolver) Option { return func(o *options) { o.resolver = r } }

// WithSocketBuffer sets the UDP socket buffers (default 8 MiB).
func WithSocketBuffer(n int) Option { return func(o *options) { o.sockBuf = n } }

// WithoutCongestionControl turns the client sessions' congestion control
// off: each sends its full credits whenever it has packets, and sprays its
// paths in turn. An uncongested session already sends that way (the
// bypass); this is for measuring what congestion control costs or gives,
// and for networks that are never shared. Sessions to a loopback address or
// over a same-host transport (shared memory) always run this way.
func WithoutCongestionControl() Option {
	return func(o *options) { o.engine.NoCongestionControl = true }
}

// WithBlindSpray makes a client session with several paths (WithPaths)
// spray its packets over them in turn, blind to their delay, instead of
// choosing the less queued of two: the baseline the path choice is
// measured against (erpc-bench multipath's erpc-spray).
func WithBlindSpray() Option { return func(o *options) { o.engine.CC.RoundRobin = true } }
