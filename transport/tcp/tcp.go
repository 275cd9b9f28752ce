package tcp

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// MaxDatagram is the largest datagram a frame carries.
const MaxDatagram = 256 << 10

// DefaultPacketSize is the datagram size endpoints use over TCP: the
// largest the wire format carries (its header and 64 KiB of data, the
// engine caps it there). TCP segments the stream anyway, so a large
// datagram costs nothing on the wire and saves per-packet work
// (docs/benchmarks/tcp.md has the 1472 B, 16 KiB and 64 KiB runs).
const DefaultPacketSize = 64 << 10

// Bounds of what a transport holds in memory.
const (
	// maxOutbox is the bytes waiting to be written on one connection
	// (queued while it connects, or while the kernel's send buffer is
	// full). A frame past it is dropped, as a full network buffer drops
	// a datagram; the engine's safety-net timer sends it again.
	maxOutbox = 16 << 20
)

// Options tunes a TCP transport; the zero value is the default.
type Options struct {
	// PacketSize is the datagram size the endpoint should use (default
	// DefaultPacketSize).
	PacketSize int
	// DialTimeout bounds a connection's setup: the TCP connect and the
	// peer's preface (default 5 s). A peer that does not answer within it
	// is reported gone.
	DialTimeout time.Duration
	// MaxConns caps the connections (accepted and dialed, handshakes
	// included); an accepted one beyond it is closed at once (default
	// 4096).
	MaxConns int
	// Logger receives one line per connection cut off for speaking
	// something else or sending a malformed frame (default slog.Default()).
	Logger *slog.Logger
}

// Stats counts what a transport did.
type Stats struct {
	Conns       int    // connections open (dialing and handshaking ones included)
	Dialed      uint64 // connections this transport opened
	Accepted    uint64 // connections accepted (before their preface was checked)
	DialFailed  uint64 // connections that could not be opened (refused, timed out)
	BadPreface  uint64 // connections cut off because the peer spoke something else
	Malformed   uint64 // connections cut off for a frame longer than MaxDatagram
	Refused     uint64 // accepted connections closed at once: MaxConns reached
	Dropped     uint64 // datagrams dropped: a connection's outbox full
	Claimed     uint64 // accepted connections whose peer's claimed listening address checked out
	ClaimFailed uint64 // accepted connections whose claim did not check out (known by their source address)
	Deferred    uint64 // sends the kernel did not take whole at once (or made while dialing), left to the writer
}

var (
	_ transport.Transport   = (*Transport)(nil)
	_ transport.PeerWatcher = (*Transport)(nil)
	_ transport.PacketSizer = (*Transport)(nil)
	_ transport.Reliable    = (*Transport)(nil)
	_ transport.Targeter    = (*Transport)(nil)
)

// Transport is one endpoint's TCP attachment: a listening socket (none for
// a client-only transport) and one connection per peer endpoint.
// Receive, Send, Wait and GonePeers are for the endpoint's loop; the
// others may be called from any goroutine.
type Transport struct {
	opts   Options
	ln     *net.TCPListener // nil: client-only
	local  netip.AddrPort   // what peers dial; the listening socket's port
	bindIP netip.Addr       // the IP dialed connections are bound to (invalid: any)
	log    *slog.Logger

	closed atomic.Bool
	done   chan struct{} // closed by Close
	ctx    context.Context
	cancel context.CancelFunc // by Close: ends dials and checks in progress
	wg     sync.WaitGroup

	tio transportIO // the platform's part: io_linux.go, io_other.go

	mu     sync.Mutex
	conns  map[netip.AddrPort]*conn // the connection Send uses for each peer
	claims map[[nonceLen]byte]*conn // dialed connections by the nonce of their claim
	all    map[*conn]struct{}       // every connection, handshaking ones included
	count  int                      // len(all)
	gone   []netip.AddrPort         // peers whose connection closed, for GonePeers
	spare  []netip.AddrPort
	ngone  atomic.Int32 // len(gone), read without the lock

	stats struct {
		dialed, accepted, dialFailed, badPreface, malformed, refused, dropped, claimed, claimFailed, deferred atomic.Uint64
	}

	// Owned by the loop.
	timer    *time.Timer
	lastAddr netip.AddrPort // Send's one-entry cache of conns
	lastConn *conn
}

// Listen opens a TCP transport listening on addr ("host:port"; port 0
// picks one), or a client-only one if addr is "".
func Listen(addr string, opts Options) (*Transport, error) {
	if opts.PacketSize <= 0 {
		opts.PacketSize = DefaultPacketSize
	}
	opts.PacketSize = min(opts.PacketSize, MaxDatagram)
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 4096
	}
	t := &Transport{
		opts:  opts,
		log:   opts.Logger,
		done:  make(chan struct{}),
		conns: make(map[netip.AddrPort]*conn),
		timer: time.NewTimer(time.Hour),
	}
	t.timer.Stop()
	t.ctx, t.cancel = context.WithCancel(context.Background())
	if t.log == nil {
		t.log = slog.Default()
	}
	if err := t.initIO(); err != nil {
		return nil, err
	}
	if addr == "" {
		return t, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.closeIO()
		return nil, err
	}
	t.ln = ln.(*net.TCPListener)
	la := t.ln.Addr().(*net.TCPAddr)
	local := canonical(la.AddrPort())
	if !local.Addr().IsUnspecified() {
		t.bindIP = local.Addr()
	}
	if local.Addr().IsUnspecified() { // peers on this host reach us on loopback
		lo := netip.AddrFrom4([4]byte{127, 0, 0, 1})
		if la.IP.To4() == nil && !la.IP.IsUnspecified() {
			lo = netip.IPv6Loopback()
		}
		local = netip.AddrPortFrom(lo, local.Port())
	}
	t.local = local
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// canonical maps an IPv4-mapped address (from a dual-stack socket) to IPv4.
func canonical(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// LocalAddr is the address peers dial (loopback when listening on all
// interfaces); the zero address for a client-only transport.
func (t *Transport) LocalAddr() netip.AddrPort { return t.local }

// Target is what a peer passes to erpc's Dial ("tcp://host:port"), or ""
// for a client-only transport.
func (t *Transport) Target() string {
	if t.ln == nil {
		return ""
	}
	return "tcp://" + t.local.String()
}

// MaxDatagram is the largest datagram the transport carries.
func (t *Transport) MaxDatagram() int { return MaxDatagram }

// PacketSize is the datagram size endpoints should use (Options.PacketSize).
func (t *Transport) PacketSize() int { return t.opts.PacketSize }

// Reliable reports that a live peer receives every datagram once and in
// order (transport.Reliable): TCP retransmits, and a connection that
// breaks is reported through GonePeers. The one exception, a frame dropped
// at a full outbox, is what the lean path's safety-net timer is for.
func (t *Transport) Reliable() bool { return true }

// Resolve turns "host:port" into an address in the form Receive reports
// peers in (IPv4 never IPv4-mapped).
func (t *Transport) Resolve(addr string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddrPort(addr); err == nil {
		return canonical(a), nil
	}
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return canonical(ta.AddrPort()), nil
}

// Stats counts what the transport did.
func (t *Transport) Stats() Stats {
	t.mu.Lock()
	n := t.count
	t.mu.Unlock()
	return Stats{
		Conns: n, Dialed: t.stats.dialed.Load(), Accepted: t.stats.accepted.Load(),
		DialFailed: t.stats.dialFailed.Load(), BadPreface: t.stats.badPreface.Load(),
		Malformed: t.stats.malformed.Load(), Refused: t.stats.refused.Load(),
		Dropped: t.stats.dropped.Load(), Claimed: t.stats.claimed.Load(), ClaimFailed: t.stats.claimFailed.Load(), Deferred: t.stats.deferred.Load(),
	}
}

// GonePeers appends the peers whose connection closed since the last call.
func (t *Transport) GonePeers(dst []netip.AddrPort) []netip.AddrPort {
	if t.ngone.Load() == 0 {
		return dst
	}
	t.mu.Lock()
	gone := t.gone
	t.gone, t.spare = t.spare[:0], gone
	t.ngone.Store(0)
	t.mu.Unlock()
	return append(dst, gone...)
}

// Close closes the listening socket and every connection; a Wait in
// progress returns ErrClosed. Closing twice is harmless.
func (t *Transport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	close(t.done)
	t.cancel()
	if t.ln != nil {
		t.ln.Close()
	}
	t.mu.Lock()
	conns := make([]*conn, 0, len(t.all))
	for c := range t.all {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	for _, c := range conns {
		c.fail(nil)
	}
	t.closeIO()
	t.wg.Wait()
	return nil
}

// ErrClosed is returned by a closed transport (transport.ErrClosed).
var ErrClosed = transport.ErrClosed
