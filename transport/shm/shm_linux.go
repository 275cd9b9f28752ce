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
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

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
// of data per packet): an 8 MiB message is then 128 packets.
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

// Receive passes the datagrams the peers have published to fn, straight
// from the shared rings, up to a turn's budget per connection (the rest
// waits for the next call); a ring's space is handed back after fn
// returns.
func (t *Transport) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	if !t.acquire() {
		return 0, transport.ErrClosed
	}
	defer t.release()
	t.flushAll()
	n := 0
	for _, c := range t.snap.Load().conns {
		if !c.in.pending() {
			continue
		}
		from := c.peer()
		// Every record counts, an empty one too: at most receiveRecords
		// records and receiveBudget bytes of ring (headers, padding and
		// pads included) per connection and call, checked before each
		// record: a record that would pass the byte budget waits for the
		// next call, unless it is the call's first (at most one datagram
		// and a pad). The loop returns the peer's credits only after
		// Receive returns, and a peer that floods its ring with empty
		// records must not hold the loop for a whole ring.
		start := c.in.pos
		room := ^uint64(0) // the first record is taken whatever its size
		for range receiveRecords {
			d, ok := c.in.take(room)
			if !ok {
				break
			}
			fn(from, d)
			n++
			if taken := c.in.pos - start; taken < receiveBudget {
				room = receiveBudget - taken
			} else {
				break
			}
		}
		if err := c.in.end(); err != nil {
			t.corrupt.Add(1)
			c.shutdown() // the watcher reports the peer gone
		}
	}
	return n, nil
}

const (
	// receiveBudget bounds the bytes of ring Receive takes from one
	// connection in one call (a ring holds megabytes).
	receiveBudget = 256 << 10

	// receiveRecords bounds the records Receive takes from one connection
	// in one call, whatever their size: each costs the engine a parse.
	receiveRecords = 256
)

// Send copies each datagram into the ring of its peer's connection and
// rings the peer if it sleeps. A datagram that finds the ring full waits
// in the connection's backlog (backlog_linux.go); one to an address with no
// connection is dropped. To an address that was resolved
// before but whose connection is gone (a restarted server), Send starts a
// new connection in the background, at most every 20 ms.
func (t *Transport) Send(msgs []transport.Message) error {
	if !t.acquire() {
		return transport.ErrClosed
	}
	defer t.release()
	s := t.snap.Load()
	var err error
	c := t.lastConn // the peer of the last Send: a ping-pong skips the map
	if t.lastSnap != s {
		c = nil
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Len() > t.maxDgram {
			err = transport.ErrTooLarge
			continue
		}
		if c == nil || c.peer() != m.To {
			if c = s.byAddr[m.To]; c == nil {
				t.noRoute(m.To)
				continue
			}
		}
		if c.dead.Load() {
			t.dropped.Add(1)
			continue
		}
		if t.flush(c) && c.out.put(m.Head, m.Payload) {
			c.ringPeer()
			continue
		}
		t.queueBacklog(c, m) // the ring is full: in order, after what waits
	}
	t.lastConn, t.lastSnap = c, s
	return err
}

// noRoute drops a datagram to an address without a connection, and
// redials the address if it was resolved before.
func (t *Transport) noRoute(to netip.AddrPort) {
	t.dropped.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	path, ok := t.known[to]
	if !ok || t.closed.Load() || time.Since(t.redialed[to]) < redialInterval {
		return
	}
	t.redialed[to] = time.Now()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if _, err := t.dial(path); err != nil && !errors.Is(err, net.ErrClosed) {
			// Nobody listens there (yet): report the address gone, so
			// that sessions connecting to it fail now rather than after
			// the failure timeout. They retry with backoff.
			t.mu.Lock()
			t.unreachable = append(t.unreachable, to)
			t.mu.Unlock()
			t.gone.Store(true)
			t.Wake()
		}
	}()
}

// ready reports whether a ring holds unread records.
func (t *Transport) ready() bool {
	for _, c := range t.snap.Load().conns {
		if c.in.pending() {
			return true
		}
	}
	return false
}

// Poll checks up to n times whether a peer has published records or a
// connection died, calling idle between two checks (see
// transport.Poller). It marks the shared memory in use once for all the
// checks: that mark is an atomic read-modify-write, a full barrier that
// costs more than a check.
func (t *Transport) Poll(n int, idle func() bool) bool {
	if !t.acquire() {
		return true // closed: Receive reports it
	}
	defer t.release()
	for range n {
		if t.gone.Load() || t.ready() {
			return true
		}
		if idle() {
			return false
		}
	}
	return false
}

// Wait returns when a peer has published records, deadline passes, or Wake
// or Close is called. It polls for Options.Spin, then sets its sleeping
// word in every connection, checks the rings once more (a peer that
// published before seeing the word set did not ring) and sleeps until its
// bell rings.
func (t *Transport) Wait(deadline time.Time) error {
	if !t.acquire() {
		return transport.ErrClosed
	}
	defer t.release()
	if t.wakePending.Swap(false) || t.ready() {
		return nil
	}
	if t.backlogged > 0 {
		// Datagrams wait for room in a peer's ring: come back soon to
		// move them, whatever the engine's deadline.
		if retry := time.Now().Add(backlogRetry); deadline.IsZero() || retry.Before(deadline) {
			deadline = retry
		}
	}
	if t.opts.Spin != 0 {
		start := time.Now()
		for i := 1; ; i++ {
			if t.closed.Load() {
				return transport.ErrClosed
			}
			if t.wakePending.Swap(false) || t.ready() {
				return nil
			}
			if i%32 == 0 {
				now := time.Now()
				if !deadline.IsZero() && !now.Before(deadline) {
					return nil
				}
				if t.opts.Spin > 0 && now.Sub(start) >= t.opts.Spin {
					break
				}
				runtime.Gosched()
			}
		}
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		return nil
	}
	t.waiting.Store(true)
	// A connection registered after this snapshot wakes us (register
	// calls Wake), so the words of these connections are enough.
	conns := t.snap.Load().conns
	t.sleepEpoch++ // a peer rings once per epoch (ringPeer)
	for _, c := range conns {
		c.sleeping.Store(t.sleepEpoch)
	}
	if !t.wakePending.Swap(false) && !t.closed.Load() && !t.ready() {
		t.bell.SetReadDeadline(deadline)
		t.bellRC.Read(t.drain) // a ring, the deadline, Wake or Close
	}
	for _, c := range conns {
		c.sleeping.Store(0)
	}
	t.waiting.Store(false)
	if t.closed.Load() {
		return transport.ErrClosed
	}
	return nil
}

// drainBell reads every datagram pending on the bell and tells whether
// any came: then Wait returns, even if nothing is ready (a ring may be for
// an earlier sleep: the peer loaded its epoch before we woke and cleared
// the word; the next Wait sleeps again at once). It returns false, to
// sleep, only after the bell reported nothing to read, so that the
// netpoller sees the next datagram. One recvmmsg reads them all (up to
// maxDrain: then Wait returns anyway, and the next one reads on).
func (t *Transport) drainBell(fd uintptr) bool {
	_, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&t.bellMsgs[0])), maxDrain, unix.MSG_DONTWAIT, 0, 0)
	return errno != unix.EAGAIN
}

// Wake makes a current or next Wait return.
func (t *Transport) Wake() {
	t.wakePending.Store(true)
	if !t.waiting.Load() || !t.acquire() {
		return
	}
	ring(t.selfBell)
	t.release()
}

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

// publishLocked replaces the loop's snapshot. t.mu is held.
func (t *Transport) publishLocked() {
	s := &snapshot{conns: t.conns, byAddr: make(map[netip.AddrPort]*conn, len(t.conns))}
	for _, c := range t.conns {
		if old := s.byAddr[c.peer()]; old == nil || old.dead.Load() {
			s.byAddr[c.peer()] = c
		}
	}
	t.snap.Store(s)
}

// liveLocked returns the open connection to addr, if any. t.mu is held.
func (t *Transport) liveLocked(addr netip.AddrPort) *conn {
	for _, c := range t.conns {
		if c.peer() == addr && !c.dead.Load() {
			return c
		}
	}
	return nil
}

var errDuplicate = errors.New("shm: already connected to that peer")

// register adds a connection whose handshake is done and starts watching
// its socket. It fails if the transport closed or a connection to the same
// peer is open. accepted says that c's handshake came in on the listening
// socket: on success, its place among the handshakes passes to c.
func (t *Transport) register(c *conn, accepted bool) error {
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return transport.ErrClosed
	}
	if old := t.liveLocked(c.peer()); old != nil {
		if !supersedes(c, old) {
			t.mu.Unlock()
			return errDuplicate
		}
		t.revokeLocked(old)
	}
	t.conns = append(t.conns[:len(t.conns):len(t.conns)], c)
	if accepted {
		t.accepting--
	}
	t.publishLocked()
	t.wg.Add(1)
	t.mu.Unlock()
	refuseRights(c.sock)
	go t.watch(c)
	t.Wake() // a Wait may hold a snapshot without c
	return nil
}

// watch waits for the peer's end of the socket to close (its process
// exited or died, or it closed its transport), then reports the peer gone.
// The socket carries nothing after the handshake, and refuses descriptors
// where the kernel can (refuseRights); any that a peer sends (before that,
// or on an older kernel) go to the closer, never released here, and a peer
// that sends them while the closer is stuck is dropped.
func (t *Transport) watch(c *conn) {
	defer t.wg.Done()
	var b [64]byte
	oob := make([]byte, maxRightsOOB)
	for {
		n, oobn, _, _, err := c.sock.ReadMsgUnix(b[:], oob)
		if err != nil || n == 0 && oobn == 0 { // an end of file, or a shutdown of ours
			break
		}
		if fds := rightsIn(oob[:oobn]); len(fds) > 0 {
			t.closer.fd(fds...)
			if t.closer.pending.Load() > closeBound(t.maxPeers) {
				shutdown(c.sock) // read on to the end of the queue
			}
		}
	}
	c.sockMu.Lock()
	c.sockGone = true // no shutdown of others' from here on
	c.sockMu.Unlock()
	t.closer.sock(c.sock) // its queue may still hold descriptors
	c.dead.Store(true)
	t.gone.Store(true)
	t.Wake()
}

// trackHandshake registers a socket in a handshake, so that Close can
// interrupt it; false if the transport is closed.
func (t *Transport) trackHandshake(s *net.UnixConn, on bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !on {
		delete(t.handshakes, s)
		return true
	}
	if t.closed.Load() {
		return false
	}
	t.handshakes[s] = struct{}{}
	return true
}

func (t *Transport) acceptLoop() {
	defer t.wg.Done()
	for {
		if t.closer.pending.Load() > closeBound(t.maxPeers) {
			// Descriptors of peers wait for the closer: accept nobody
			// until it catches up (closer_linux.go).
			if t.closed.Load() {
				return
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		s, err := t.ln.AcceptUnix()
		if err != nil {
			if t.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond) // EMFILE and the like
			continue
		}
		t.mu.Lock()
		if t.closed.Load() {
			t.mu.Unlock()
			t.closer.sock(s)
			return
		}
		if len(t.conns)+t.accepting >= t.maxPeers {
			t.mu.Unlock()
			t.refuse(s)
			continue
		}
		t.accepting++
		t.handshakes[s] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go func() {
			defer t.wg.Done()
			err := t.accept(s) // nil: registered, and the count passed to the connection
			t.mu.Lock()
			delete(t.handshakes, s)
			if err != nil {
				t.accepting--
			}
			t.mu.Unlock()
			if err != nil {
				shutdown(s)
				t.closer.sock(s)
			}
		}()
	}
}
