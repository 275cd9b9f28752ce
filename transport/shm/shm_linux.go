//go:build linux

package shm

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

const (
	minRingSize = 64 << 10
	maxRingSize = min(1<<30, math.MaxInt/4+1) // 512 MiB on 32-bit systems

	redialInterval = 20 * time.Millisecond

	// maxDrain bounds the bell datagrams one wake-up reads.
	maxDrain = 64
)

// Transport is one endpoint's shared-memory attachment: its listening
// socket (if any), its bell, and one connection per peer. Receive,
// Send, Wait and GonePeers are for the endpoint's loop; Wake, Close,
// Resolve, LocalAddr and Stats may be called from any goroutine.
type Transport struct {
	opts     Options
	ringSize int
	maxDgram int
	maxPeers int
	local    netip.AddrPort
	ln       *net.UnixListener
	sockPath string // the absolute path of ln, named in our hellos to prove local

	// Our bell: a unix datagram socket bound to an abstract address. Each
	// peer gets a socket of its own connected to it, and rings it when it
	// publishes a record while our sleeping word in their connection is
	// set. Wait reads the bell through the Go netpoller, so a sleeping
	// loop holds no thread and no P: other goroutines of the process keep
	// running, even with GOMAXPROCS 1 (a blocking futex would hold the P
	// until the runtime's monitor noticed, tens of microseconds to 10 ms
	// later).
	bell     *os.File // the receiving socket, registered with the netpoller
	bellRC   syscall.RawConn
	bellName string                // its address, "@" and the name the kernel picked
	selfBell int                   // a socket connected to our bell: Wake and Close ring it
	drain    func(fd uintptr) bool // t.drainBell, made once
	bellMsgs [maxDrain]mmsghdr     // for recvmmsg: no buffers, the datagrams are dropped

	wakePending atomic.Bool // Wake was called; the next Wait returns at once
	waiting     atomic.Bool // the loop is in Wait and may sleep on the bell
	closed      atomic.Bool
	closing     chan struct{} // closed by Close: probes stop waiting (probe_linux.go)
	probing     atomic.Int32  // probes in flight
	refs        atomic.Int32  // calls touching shared memory; Close waits them out
	gone        atomic.Bool   // a connection died: GonePeers has work
	dropped     atomic.Uint64
	corrupt     atomic.Uint64 // connections dropped for a garbled ring
	unverified  atomic.Uint64 // connectors known by an address we assigned
	revoked     atomic.Uint64 // connections that lost their listener address (identity_linux.go)
	assigned    atomic.Uint64 // the last address assigned (identity_linux.go)
	backlogs    atomic.Uint64 // datagrams that waited for ring space

	sleepEpoch uint64 // the loop's: numbers its sleeps, never 0 while it sleeps

	// Owned by the loop (backlog_linux.go).
	lastConn     *conn     // the connection the last Send used
	lastSnap     *snapshot // the snapshot it came from
	backlogged   int       // connections with a backlog
	backlogBytes int       // bytes in all backlogs, at most maxBacklog
	spare        [][]byte  // free backlog buffers

	snap atomic.Pointer[snapshot] // the connections, for the loop

	// closer closes the descriptors a peer handed us, and the sockets
	// whose queues may hold some, off every goroutine that others wait
	// for (closer_linux.go).
	closer closer

	mu          sync.Mutex
	conns       []*conn                      // registered, dead ones until reaped
	accepting   int                          // handshakes on the listening socket, counted against maxPeers
	paths       map[string]netip.AddrPort    // dialed socket path -> server
	known       map[netip.AddrPort]string    // server -> its socket path, to redial
	redialed    map[netip.AddrPort]time.Time // last redial started
	handshakes  map[*net.UnixConn]struct{}   // sockets in a handshake
	unreachable []netip.AddrPort             // redials that failed, for GonePeers
	recheck     []*conn                      // claimed listener addresses to check again (identity_watch_linux.go)
	rechecking  bool                         // a goroutine checks them
	wg          sync.WaitGroup               // goroutines: accept, handshakes, watchers, redials
}

// snapshot is an immutable view of the connections, replaced on change.
type snapshot struct {
	conns  []*conn
	byAddr map[netip.AddrPort]*conn
}

var (
	_ transport.Transport   = (*Transport)(nil)
	_ transport.PeerWatcher = (*Transport)(nil)
	_ transport.PacketSizer = (*Transport)(nil)
	_ transport.Poller      = (*Transport)(nil)
	_ transport.Reliable    = (*Transport)(nil)
)

// Listen opens a shared-memory transport. path is the unix socket through
// which peers connect ("" makes a client-only transport). A stale socket
// file at path (left by a process that died) is replaced; one that a live
// process listens on is an error.
func Listen(path string, opts Options) (*Transport, error) {
	if err := checkSeals(); err != nil {
		return nil, err // an old kernel: ErrNotSupported, saying why
	}
	t := &Transport{
		opts:       opts,
		ringSize:   ringSizeOf(opts.RingSize),
		maxPeers:   opts.MaxPeers,
		selfBell:   -1,
		closing:    make(chan struct{}),
		paths:      make(map[string]netip.AddrPort),
		known:      make(map[netip.AddrPort]string),
		redialed:   make(map[netip.AddrPort]time.Time),
		handshakes: make(map[*net.UnixConn]struct{}),
	}
	t.maxDgram = min(t.ringSize/16, maxDatagram)
	if t.maxPeers <= 0 {
		t.maxPeers = DefaultMaxPeers
	}
	t.snap.Store(&snapshot{})
	t.drain = t.drainBell
	bellFD, bellName, err := newBellReceiver()
	if err != nil {
		return nil, err
	}
	t.bell, t.bellName = os.NewFile(uintptr(bellFD), "erpc-shm-bell"), bellName
	if t.bellRC, err = t.bell.SyscallConn(); err == nil {
		t.selfBell, err = t.newBellSender()
	}
	if err != nil {
		t.release0()
		return nil, err
	}
	if path == "" {
		t.local = clientAddr()
		return t, nil
	}
	if t.local, err = listenerAddr(path); err == nil {
		t.sockPath, _ = filepath.Abs(path)
		t.ln, err = listenUnix(path)
	}
	if err != nil {
		t.release0()
		return nil, err
	}
	t.wg.Add(1)
	go t.acceptLoop()
	return t, nil
}

func ringSizeOf(n int) int {
	if n <= 0 {
		n = DefaultRingSize
	}
	n = min(max(n, minRingSize), maxRingSize)
	return 1 << bits.Len(uint(n-1))
}

// listenerAddr derives a listening transport's address from its path.
func listenerAddr(path string) (netip.AddrPort, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return netip.AddrPort{}, err
	}
	h := sha256.Sum256([]byte(abs))
	a := [16]byte{0xfd, 0x65, 0x73, 0x68, 0, 0}
	copy(a[6:], h[:])
	return netip.AddrPortFrom(netip.AddrFrom16(a), 1), nil
}

// listenUnix listens on a SOCK_SEQPACKET unix socket at path, replacing a
// stale socket file.
func listenUnix(path string) (*net.UnixListener, error) {
	addr := &net.UnixAddr{Name: path, Net: "unixpacket"}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("shm: %s exists and is not a socket", path)
		}
		if c, err := net.DialUnix("unixpacket", nil, addr); err == nil {
			c.Close()
			return nil, fmt.Errorf("shm: %s: a live endpoint listens there", path)
		}
		os.Remove(path) // stale: its listener died
	}
	ln, err := net.ListenUnix("unixpacket", addr)
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	// Connections inherit this: no connector can queue descriptors before
	// its handshake starts (accept turns it on), so neither the refusal of
	// one nor the close of the listening socket with connections not yet
	// accepted releases any (closer_linux.go).
	passRights(ln, false)
	return ln, nil
}

// LocalAddr is the transport's synthetic address (see the package comment).
func (t *Transport) LocalAddr() netip.AddrPort { return t.local }

// MaxDatagram is the largest datagram the transport carries: RingSize/16,
// at most 256 KiB.
func (t *Transport) MaxDatagram() int { return t.maxDgram }

// SameHost reports true: a shared-memory peer is on this host, with no
// network between for congestion control to govern.
func (t *Transport) SameHost() bool { return true }

// PacketSize asks the endpoint for datagrams as large as it allows (64 KiB
// less a line of data per packet): an 8 MiB message is then 129 packets.
func (t *Transport) PacketSize() int { return t.maxDgram }

// Stats returns the transport's counters.
func (t *Transport) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.conns {
		if !c.dead.Load() {
			n++
		}
	}
	return Stats{Peers: n, Dropped: t.dropped.Load(), Backlogged: t.backlogs.Load(),
		Corrupt: t.corrupt.Load(), Unverified: t.unverified.Load(), Revoked: t.revoked.Load()}
}

// acquire marks a call that touches shared memory; false if closed.
func (t *Transport) acquire() bool {
	t.refs.Add(1)
	if t.closed.Load() {
		t.refs.Add(-1)
		return false
	}
	return true
}

func (t *Transport) release() { t.refs.Add(-1) }

// GonePeers appends the peers whose connection closed since the last call
// (and the resolved addresses that a redial found nobody listening at), and
// releases those connections' memory.
func (t *Transport) GonePeers(dst []netip.AddrPort) []netip.AddrPort {
	if !t.gone.Load() || !t.acquire() {
		return dst
	}
	defer t.release()
	t.gone.Store(false)
	t.mu.Lock()
	var dead []*conn
	live := make([]*conn, 0, len(t.conns))
	for _, c := range t.conns {
		if c.dead.Load() {
			dead = append(dead, c)
		} else {
			live = append(live, c)
		}
	}
	if len(dead) > 0 {
		t.conns = live
		t.publishLocked()
	}
	for _, c := range dead {
		if t.liveLocked(c.peer()) == nil { // not replaced by a new connection
			dst = append(dst, c.peer())
		}
	}
	for _, a := range t.unreachable {
		if t.liveLocked(a) == nil {
			dst = append(dst, a)
		}
	}
	t.unreachable = t.unreachable[:0]
	t.mu.Unlock()
	for _, c := range dead {
		t.flush(c) // discards its backlog
		t.unwatch(c)
		c.unmap(&t.closer)
	}
	return dst
}

// Resolve returns the address of the endpoint listening on the unix socket
// at target, connecting to it unless a connection is open. If nobody
// listens there, it returns the address a listener on that path would have
// (see the package comment) and no error: datagrams to it are dropped, and
// GonePeers reports it, until a listener appears. An address literal
// ("[fd65:7368::…]:1") is returned as is.
func (t *Transport) Resolve(target string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddrPort(target); err == nil {
		return a, nil
	}
	if t.closed.Load() {
		return netip.AddrPort{}, transport.ErrClosed
	}
	if a, ok := t.resolved(target); ok {
		return a, nil
	}
	a, err := t.dial(target)
	if errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.ENOENT) {
		// Nobody listens there now. Return the address a listener on that
		// path has: sending to it redials, and GonePeers reports it gone
		// while the redial fails, so an endpoint's Dial fails at once with
		// Unavailable, as it would on a network with no server. A
		// connection known by that address is not that endpoint (any
		// more): nobody listens at its path.
		if a, err = listenerAddr(target); err == nil {
			t.revokeListener(a, 0)
			t.remember(target, a)
		}
	}
	return a, err
}

// Close closes every connection (peers see it at once), the listening
// socket (its file is removed) and releases all shared memory. A Wait in
// progress returns ErrClosed.
func (t *Transport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	close(t.closing)
	ring(t.selfBell) // end a Wait in progress
	if t.ln != nil {
		t.ln.Close()
	}
	t.mu.Lock()
	for _, c := range t.conns {
		c.shutdown() // the watcher hands it to the closer
	}
	for s := range t.handshakes {
		shutdown(s) // its goroutine hands it to the closer
	}
	t.mu.Unlock()
	t.wg.Wait()
	for t.refs.Load() != 0 {
		time.Sleep(20 * time.Microsecond)
	}
	t.mu.Lock()
	conns := t.conns
	t.conns = nil
	t.publishLocked()
	t.mu.Unlock()
	for _, c := range conns {
		t.unwatch(c)
		c.unmap(&t.closer)
	}
	t.release0()
	return nil
}

// release0 frees the bell.
func (t *Transport) release0() {
	if t.bell != nil {
		t.bell.Close()
		t.bell = nil
	}
	if t.selfBell >= 0 {
		unix.Close(t.selfBell)
		t.selfBell = -1
	}
}
