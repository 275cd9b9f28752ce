//go:build linux

package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Each side of a connection creates the memory it writes, and maps the
// peer's read-only: a memfd of its own,
//
//	[0, 4096)         header: magic, ring size R, head, sleeping word
//	[4096, 4096+R)    the ring it produces (its datagrams to the peer)
//
// where head is what it consumed of the peer's ring (which the peer's
// producer reads) and the sleeping word is its own (which the peer's
// producer reads before it rings). Each word sits 128 bytes or more from
// the next (a cache line of its own, and no sharing through adjacent-line
// prefetch). So no side ever writes into memory the peer created, and no
// record of ours lies where the peer can write.
//
// A side maps its memfd writable, then seals it: F_SEAL_SHRINK,
// F_SEAL_GROW, and F_SEAL_FUTURE_WRITE (then F_SEAL_SEAL), which refuses
// every later writable mapping, write(2), and, on tmpfs, hole punching
// (fallocate PUNCH_HOLE, madvise MADV_REMOVE) to everyone, the creator
// included: its own mapping stays writable. A side maps the peer's memfd
// only after checking those three seals: a mapping the peer could shrink
// would kill us with SIGBUS, and a punch in progress over a page makes
// every fault on it wait until the punch is done (shmem_fault), so a peer
// that could punch its memory could stall our loop, for hundreds of
// milliseconds a punch, at any atomic load of its ring. Sealed, the pages
// a side reads stay as they are but for the peer's writes through its own
// mapping. The same holds for the memfd we pass: the peer cannot punch it.
//
// The handshake over the SOCK_SEQPACKET unix socket is three messages of
// 64 bytes (the hello, more if it names a socket), each starting with the
// magic:
//
//  1. The listener greets the connector as soon as it accepts: status 0
//     (ok) or 2 (full: MaxPeers reached; it closes the socket at once and
//     the connector's Resolve fails with ErrFull). The connector sends
//     nothing before the greeting, so a refused socket holds no unread
//     data and costs the listener no goroutine.
//  2. The connector sends: ring size R, the address it claims (16 bytes and
//     a port) and, after the 64 bytes, the absolute path of its listening
//     socket if it has one, with SCM_RIGHTS [its memfd, bell socket]. The
//     bell socket is a fresh unix datagram socket connected to the
//     connector's bell.
//  3. The listener checks the memfd's seals (SHRINK, GROW and FUTURE_WRITE:
//     this also proves a memfd), its file system (tmpfs, not hugetlbfs)
//     and its size, all before mapping it; then the header (magic and R,
//     each read once) and that the bell is a unix datagram socket. It
//     takes the claimed address only if the kernel vouches for it, else it
//     assigns one (identity_linux.go). It answers: status (0 ok, 1 already
//     connected to that peer), the address it knows the connector by, and
//     the size L of its own ring (at byte 40): the larger of R and its own
//     RingSize, so that each side's ring carries its MaxDatagram, which
//     the engine sends to every peer alike. With it go [its own fresh bell
//     socket, its memfd of that size], which the connector checks the same
//     way (L a power of two, at least R).
//
// The addresses in the greeting and the reply are information only: the
// connector knows the listener by the path it dialed.
//
// Both close the memfds once mapped, and keep the bell socket the peer
// passed to ring it (send, MSG_DONTWAIT): the memory lives as long as a
// mapping does, and appears in no file system. The listener gives a
// connection handshakeTimeout from its accept to step 3. After the
// handshake the socket carries nothing (and refuses descriptors where the
// kernel can); it only signals the peer's death by closing. Every
// descriptor a peer passed that is not a mapped memfd, and every socket
// whose queue may hold one, is closed by the closer (closer_linux.go),
// never by the goroutine that read it.
const (
	pageSize  = 4096
	hdrMagic  = 0
	hdrRing   = 8
	hdrHead   = 384
	hdrSleep  = 768
	memMagic  = 0x376d687363707265 // "erpcshm7": each side's memory its own, sealed against writes of others; each side's ring sized for its MaxDatagram; records carry an alignment gap (ring.go)
	helloSize = 64
	replyRing = 40 // where the listener's reply holds the size of its ring

	statusOK        = 0
	statusDuplicate = 1
	statusFull      = 2
)

// handshakeTimeout bounds a handshake, on both sides (a variable for the
// tests).
var handshakeTimeout = 5 * time.Second

// conn is a connection to one peer.
type conn struct {
	addr         atomic.Pointer[netip.AddrPort] // the peer's address; replaced only if it loses it (identity_linux.go)
	sock         *net.UnixConn                  // open while the peer lives
	mem          []byte                         // ours: the header and the ring we produce
	peerMem      []byte                         // the peer's, read-only: its header and the ring we consume
	sleeping     *atomic.Uint64                 // our word (in mem): the Wait's epoch while we sleep, else 0
	peerSleeping *atomic.Uint64                 // the peer's (in peerMem)
	rung         uint64                         // the peer's epoch we last rang (the loop's)
	peerBell     int                            // the socket the peer passed to ring it; -1 once closed
	out          producer
	in           consumer
	backlog      backlog // datagrams waiting for room in out (the loop's)
	dead         atomic.Bool

	// sockMu orders shutdowns of sock by others (the loop, Close) before
	// the watcher hands it to the closer: a shutdown in progress holds a
	// reference, and would make the close its own (closer_linux.go).
	sockMu   sync.Mutex
	sockGone bool // handed to the closer

	// listenPid is, for a peer known by a listener address, the pid of
	// the process that the kernel said listens at that address's path
	// when the connection was made (0 for other peers): see supersedes.
	listenPid   int32
	claimedPath string // for a listener address taken from a claim (or dialed): its socket, whose directory is watched
	claimedUid  uint32 // and the connector's user
	peerStart   uint32 // for a connector known by an assigned address: its process's start time (adoptDuplicate)

	// cred is the peer process's credentials as the kernel gave them
	// (SO_PEERCRED) when the connection was made; hasCred says whether
	// it could. Set before register, read-only after (PeerCreds).
	cred    unix.Ucred
	hasCred bool
}

// peer is the address the peer is known by.
func (c *conn) peer() netip.AddrPort { return *c.addr.Load() }

func atomicU64(b []byte, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&b[off]))
}

// newConn makes a connection over our memory mem, pageSize+outRing bytes,
// and the peer's peerMem, pageSize+inRing (the sizes as validated in the
// handshake: the headers' copies are never read again); it owns peerBell.
func newConn(peer netip.AddrPort, sock *net.UnixConn, mem, peerMem []byte, outRing, inRing int, peerBell int) *conn {
	size, peerSize := pageSize+outRing, pageSize+inRing
	mem, peerMem = mem[:size:size], peerMem[:peerSize:peerSize]
	c := &conn{sock: sock, mem: mem, peerMem: peerMem, peerBell: peerBell}
	c.addr.Store(&peer)
	c.out = newProducer(atomicU64(peerMem, hdrHead), mem[pageSize:])
	c.in = newConsumer(atomicU64(mem, hdrHead), peerMem[pageSize:])
	c.sleeping, c.peerSleeping = atomicU64(mem, hdrSleep), atomicU64(peerMem, hdrSleep)
	return c
}

// unmap releases the connection's memory and hands the peer's bell to the
// closer: its queue may hold descriptors whose release blocks.
func (c *conn) unmap(k *closer) {
	if c.mem != nil {
		unix.Munmap(c.mem)
		c.mem = nil
	}
	if c.peerMem != nil {
		unix.Munmap(c.peerMem)
		c.peerMem = nil
	}
	if c.peerBell >= 0 {
		k.fd(c.peerBell)
		c.peerBell = -1
	}
}

// dial connects to the endpoint listening at path: it waits for the
// greeting, creates the rings, passes them and a bell socket, and checks
// the bell socket it gets back.
func (t *Transport) dial(path string) (netip.AddrPort, error) {
	var zero netip.AddrPort
	if !t.acquire() { // keeps our bell until the handshake is done
		return zero, net.ErrClosed
	}
	defer t.release()
	w := t.watchDialed(path) // before the connect: a change after it is seen
	s, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		w.drop(t)
		return zero, fmt.Errorf("shm: %w", err)
	}
	if !t.trackHandshake(s, true) {
		w.drop(t)
		t.closer.sock(s) // the listener may have sent descriptors already
		return zero, net.ErrClosed
	}
	var (
		mem, peerMem []byte
		ok           bool
	)
	defer func() {
		t.trackHandshake(s, false)
		if !ok {
			w.drop(t)
			t.closer.sock(s) // its queue may hold the listener's descriptors
			for _, m := range [][]byte{mem, peerMem} {
				if m != nil {
					unix.Munmap(m)
				}
			}
		}
	}()
	s.SetDeadline(time.Now().Add(handshakeTimeout))
	greeting, _, err := readMsg(s, 0, &t.closer)
	if err != nil {
		return zero, err
	}
	switch status, _, err := parseReply(greeting); {
	case err != nil:
		return zero, err
	case status == statusFull:
		return zero, fmt.Errorf("shm: %s: %w", path, ErrFull)
	case status != statusOK:
		return zero, errHandshake
	}
	fd, mem, err := createShared(t.ringSize)
	if err != nil {
		return zero, err
	}
	bell, err := t.newBellSender()
	if err != nil {
		unix.Close(fd)
		return zero, err
	}
	hello := make([]byte, helloSize, helloSize+len(t.sockPath))
	binary.LittleEndian.PutUint64(hello, memMagic)
	binary.LittleEndian.PutUint64(hello[8:], uint64(t.ringSize))
	putAddr(hello[16:], t.local)
	if len(t.sockPath) <= maxSockPath {
		hello = append(hello, t.sockPath...) // "" for a client
	}
	_, _, err = s.WriteMsgUnix(hello, unix.UnixRights(fd, bell), nil)
	unix.Close(fd) // the peer holds its own references now; the mapping ours
	unix.Close(bell)
	if err != nil {
		return zero, fmt.Errorf("shm: handshake: %w", err)
	}
	reply, fds, err := readMsg(s, 2, &t.closer)
	if err != nil {
		return zero, err
	}
	// The listener is the endpoint at path, whatever it says it is.
	status, _, err := parseReply(reply)
	peer, aerr := listenerAddr(path)
	if err != nil || aerr != nil || status == statusFull || (status == statusOK) != (len(fds) == 2) {
		t.closer.fd(fds...)
		return zero, errHandshake
	}
	if status == statusDuplicate {
		t.closer.fd(fds...)
		if !t.adoptDuplicate(s, peer, w) {
			return zero, errDuplicate
		}
		t.remember(path, peer)
		return peer, nil
	}
	if err := checkBell(fds[0]); err != nil {
		t.closer.fd(fds...)
		return zero, err
	}
	// The listener's ring: at least ours, so that it carries the
	// listener's MaxDatagram too (its RingSize may be larger than ours).
	peerRing := binary.LittleEndian.Uint64(reply[replyRing:])
	if peerRing < uint64(t.ringSize) || peerRing > maxRingSize || peerRing&(peerRing-1) != 0 {
		t.closer.fd(fds...)
		return zero, errHandshake
	}
	peerMem, err = mapPeer(fds[1], int(peerRing))
	if err != nil {
		t.closer.fd(fds...) // fds[1] may be anything but a memfd
		return zero, err
	}
	unix.Close(fds[1]) // a sealed memfd: its release cannot block
	s.SetDeadline(time.Time{})
	c := newConn(peer, s, mem, peerMem, t.ringSize, int(peerRing), fds[0])
	cred, cerr := peerCred(s) // whoever called listen on the socket we reached
	if cerr == nil {
		c.cred, c.hasCred = *cred, true
		c.listenPid = cred.Pid
		if w.ok && cred.Pid > 0 {
			c.claimedPath, c.claimedUid = w.path, cred.Uid // its directory is watched
		}
	}
	if err := t.register(c, false); err != nil {
		c.unmap(&t.closer) // the bell, and the memory, which the deferred cleanup then skips
		mem, peerMem = nil, nil
		if errors.Is(err, errDuplicate) { // connected the other way meanwhile
			t.remember(path, peer)
			return peer, nil
		}
		return zero, err
	}
	ok = true
	if c.claimedPath == "" {
		w.drop(t)
	} else if claimedDirs.gen(w.path) != w.gen {
		t.recheckDir(filepath.Dir(w.path), filepath.Base(w.path), true) // something changed there since the connect
	}
	t.remember(path, peer)
	return peer, nil
}

func (t *Transport) remember(path string, peer netip.AddrPort) {
	t.mu.Lock()
	t.paths[path] = peer
	t.known[peer] = path
	t.mu.Unlock()
}

// refuse answers a connection beyond MaxPeers with a "full" greeting and
// closes it. The send cannot block the accept loop: MSG_DONTWAIT, into a
// socket nobody has written to yet. The close goes to the closer: the
// connector may have sent descriptors before the greeting.
func (t *Transport) refuse(s *net.UnixConn) {
	b := listenerMsg(statusFull, t.local)
	if rc, err := s.SyscallConn(); err == nil {
		rc.Write(func(fd uintptr) bool {
			unix.Sendmsg(int(fd), b, nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
			return true
		})
	}
	shutdown(s)
	t.closer.sock(s)
}

// accept runs the listening side of the handshake on a new connection. It
// returns nil once the connection is registered (then the watcher owns s).
func (t *Transport) accept(s *net.UnixConn) error {
	deadline := time.Now().Add(handshakeTimeout)
	s.SetDeadline(deadline)
	passRights(s, true) // off on the listening socket: the hello carries two
	if _, _, err := s.WriteMsgUnix(listenerMsg(statusOK, t.local), nil, nil); err != nil {
		return fmt.Errorf("shm: handshake: %w", err)
	}
	hello, fds, err := readMsg(s, 2, &t.closer)
	if err != nil {
		return err
	}
	defer func() { t.closer.fd(fds...) }() // the memfd, and the bell unless a connection took it
	if len(fds) != 2 {
		return errHandshake
	}
	ring, claim, sock, err := parseHello(hello)
	if err != nil {
		return err
	}
	cred, err := peerCred(s)
	if err != nil {
		return fmt.Errorf("shm: peer credentials: %w", err)
	}
	peerMem, err := mapPeer(fds[0], ring)
	if err != nil {
		return err
	}
	if err := checkBell(fds[1]); err != nil {
		unix.Munmap(peerMem)
		return err
	}
	bell, err := t.newBellSender()
	if err != nil {
		unix.Munmap(peerMem)
		return err
	}
	defer unix.Close(bell)
	// Our ring is the larger of the connector's choice and our own
	// RingSize, so that it carries our MaxDatagram (RingSize/16), which
	// the engine sends to every peer alike: a connector's small ring
	// must not hold a datagram of ours forever.
	outRing := max(ring, t.ringSize)
	memFD, mem, err := createShared(outRing)
	if err != nil {
		unix.Munmap(peerMem)
		return err
	}
	defer unix.Close(memFD)
	// After every check that can refuse: only a handshake that passes
	// them costs a probe.
	peer, verified, gen, err := t.connectorAddr(cred, claim, sock, deadline)
	if err != nil {
		unix.Munmap(peerMem)
		unix.Munmap(mem)
		return err
	}
	c := newConn(peer, s, mem, peerMem, outRing, ring, fds[1])
	c.cred, c.hasCred = *cred, true
	if kind, _, _ := addrKind(peer); verified && kind == kindListener {
		// The process listening at sock, checked just now; its directory
		// is watched from before the check (identity_watch_linux.go).
		c.listenPid, c.claimedPath, c.claimedUid = cred.Pid, sock, cred.Uid
	}
	if !verified {
		c.peerStart, _ = startTime(cred.Pid)
	}
	fds = fds[:1] // c owns the peer's bell
	if err := t.register(c, true); err != nil {
		t.unwatch(c)
		c.unmap(&t.closer)
		if errors.Is(err, errDuplicate) {
			s.WriteMsgUnix(listenerMsg(statusDuplicate, peer), nil, nil)
		}
		return err
	}
	if c.claimedPath != "" && claimedDirs.gen(sock) != gen {
		t.recheckDir(filepath.Dir(sock), filepath.Base(sock), true) // something changed there since the check
	}
	// From here the watcher owns s: a failed reply shuts it down and the
	// watcher reports the peer gone.
	s.SetDeadline(time.Time{})
	reply := listenerMsg(statusOK, peer)
	binary.LittleEndian.PutUint64(reply[replyRing:], uint64(outRing))
	if _, _, err := s.WriteMsgUnix(reply, unix.UnixRights(bell, memFD), nil); err != nil {
		c.shutdown()
	}
	return nil
}
