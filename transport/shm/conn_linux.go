//go:build linux

package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The shared mapping of one connection, created by the connecting side:
//
//	[0, 4096)                       header: magic, ring size, counters
//	[4096, 4096+R)                  ring 0: connector -> listener
//	[4096+R, 4096+2R)               ring 1: listener -> connector
//
// Each counter sits 128 bytes from the next (a cache line of its own, and
// no sharing through adjacent-line prefetch). A doorbell page (one memfd
// per transport, passed to every peer) holds the sleeping word; beside it
// each transport passes its bell, an eventfd the peer writes to wake it.
//
// The handshake over the SOCK_SEQPACKET unix socket is two 64-byte
// messages. The connector sends: magic, ring size R, its address (16 bytes
// and a port), with SCM_RIGHTS [rings memfd, its doorbell memfd, its bell
// eventfd]. The listener checks each memfd's seals (F_SEAL_SHRINK and
// F_SEAL_GROW: its size can never change, so a mapping of it cannot fault),
// file system and size before mapping it, then the header (magic and R,
// each read once: R is used as given in the hello), and answers: magic,
// status (0 ok, 1 already connected to that peer), its address, with [its
// doorbell memfd, its bell]. Both close the memfds once
// mapped (and keep the peer's bell to ring it): the
// memory lives as long as a mapping does, and appears in no file system.
// After the handshake the socket carries nothing; it only signals the
// peer's death by closing.
const (
	pageSize  = 4096
	hdrMagic  = 0
	hdrRing   = 8
	hdrTail0  = 256
	hdrHead0  = 384
	hdrTail1  = 512
	hdrHead1  = 640
	memMagic  = 0x326d687363707265 // "erpcshm2"
	helloSize = 64

	dbSleeping = 0

	statusOK        = 0
	statusDuplicate = 1
)

// conn is a connection to one peer.
type conn struct {
	peer         netip.AddrPort
	sock         *net.UnixConn // open while the peer lives
	mem          []byte        // the rings
	peerDB       []byte        // the peer's doorbell page
	peerSleeping *atomic.Uint32
	peerBell     int // the peer's eventfd; -1 once closed
	out          producer
	in           consumer
	dead         atomic.Bool
}

func atomicU64(b []byte, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&b[off]))
}

func atomicU32(b []byte, off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&b[off]))
}

// newConn makes a connection over the rings in mem, pageSize+2*r bytes (r
// as validated in the handshake: the header's copy is never read again);
// it owns peerBell.
func newConn(peer netip.AddrPort, sock *net.UnixConn, mem, peerDB []byte, r int, peerBell int, connector bool) *conn {
	c := &conn{peer: peer, sock: sock, mem: mem, peerDB: peerDB, peerBell: peerBell}
	c.peerSleeping = atomicU32(peerDB, dbSleeping)
	ring0 := mem[pageSize : pageSize+r : pageSize+r]
	ring1 := mem[pageSize+r : pageSize+2*r : pageSize+2*r]
	t0, h0 := atomicU64(mem, hdrTail0), atomicU64(mem, hdrHead0)
	t1, h1 := atomicU64(mem, hdrTail1), atomicU64(mem, hdrHead1)
	if connector {
		c.out, c.in = newProducer(t0, h0, ring0), newConsumer(t1, h1, ring1)
	} else {
		c.out, c.in = newProducer(t1, h1, ring1), newConsumer(t0, h0, ring0)
	}
	return c
}

// ringPeer wakes the peer if it sleeps. Only the producer that clears the
// sleeping word rings, so a busy stream costs one atomic load per record.
func (c *conn) ringPeer() {
	if c.peerSleeping.Load() != 0 && c.peerSleeping.CompareAndSwap(1, 0) {
		ringBell(c.peerBell)
	}
}

// ringBell adds one to the eventfd bell, waking whoever waits on it. The bell
// is non-blocking: a counter that somehow filled up has a wake-up pending
// anyway.
func ringBell(bell int) {
	one := [8]byte{1}
	unix.Write(bell, one[:])
}

func (c *conn) unmap() {
	if c.mem != nil {
		unix.Munmap(c.mem)
		c.mem = nil
	}
	if c.peerDB != nil {
		unix.Munmap(c.peerDB)
		c.peerDB = nil
	}
	if c.peerBell >= 0 {
		unix.Close(c.peerBell)
		c.peerBell = -1
	}
}

// createShared makes a memfd of size bytes, seals its size and maps it.
func createShared(name string, size int) (int, []byte, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("shm: ftruncate: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("shm: seal: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("shm: mmap: %w", err)
	}
	return fd, mem, nil
}

// mapShared maps a memfd received from a peer, which must be size bytes
// and sealed so that its size cannot change: a mapping beyond the end of a
// file faults with SIGBUS. The seals are checked first: F_GET_SEALS
// succeeds only on a memfd (no file system is called), and once SHRINK and
// GROW are set they stay, so the size checked after them holds for good.
func mapShared(fd, size int) ([]byte, error) {
	const need = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: peer's shared memory is not a memfd: %w", err)
	}
	if seals&need != need {
		return nil, fmt.Errorf("shm: peer's shared memory is not sealed against resizing (seals %#x)", seals)
	}
	// A sealed file is on tmpfs or hugetlbfs; hugetlbfs pages can run out
	// at fault time (SIGBUS again).
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return nil, fmt.Errorf("shm: fstatfs: %w", err)
	}
	if fs.Type != unix.TMPFS_MAGIC {
		return nil, fmt.Errorf("shm: peer's shared memory is on file system %#x, not tmpfs", fs.Type)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shm: fstat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(size) {
		return nil, fmt.Errorf("shm: peer's shared memory is %d bytes, want %d", st.Size, size)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mmap: %w", err)
	}
	return mem, nil
}

func putAddr(b []byte, a netip.AddrPort) {
	a16 := a.Addr().As16()
	copy(b, a16[:])
	binary.LittleEndian.PutUint16(b[16:], a.Port())
}

func getAddr(b []byte) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[:16])), binary.LittleEndian.Uint16(b[16:]))
}

var errHandshake = errors.New("shm: bad handshake from peer")

// readMsg reads one handshake message and the descriptors passed with it,
// at most maxFDs (all closed on error).
func readMsg(s *net.UnixConn, maxFDs int) ([]byte, []int, error) {
	b := make([]byte, helloSize)
	oob := make([]byte, unix.CmsgSpace(4*maxFDs))
	n, oobn, _, _, err := s.ReadMsgUnix(b, oob)
	if err != nil {
		return nil, nil, fmt.Errorf("shm: handshake: %w", err)
	}
	var fds []int
	if cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range cmsgs {
			if f, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, f...)
			}
		}
	}
	if n != helloSize || len(fds) > maxFDs || binary.LittleEndian.Uint64(b) != memMagic {
		closeAll(fds)
		return nil, nil, errHandshake
	}
	return b, fds, nil
}

// parseHello checks a connector's hello (magic, ring size, address) and
// returns its ring size and address.
func parseHello(b []byte) (ring int, peer netip.AddrPort, err error) {
	if len(b) != helloSize || binary.LittleEndian.Uint64(b) != memMagic {
		return 0, peer, errHandshake
	}
	r := binary.LittleEndian.Uint64(b[8:])
	if r < minRingSize || r > maxRingSize || r&(r-1) != 0 {
		return 0, peer, errHandshake
	}
	return int(r), getAddr(b[16:]), nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// dial connects to the endpoint listening at path: it creates the rings,
// passes them and its doorbell, and maps the doorbell it gets back.
func (t *Transport) dial(path string) (netip.AddrPort, error) {
	var zero netip.AddrPort
	if !t.acquire() { // keeps the doorbell until the handshake is done
		return zero, net.ErrClosed
	}
	defer t.release()
	s, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return zero, fmt.Errorf("shm: %w", err)
	}
	if !t.trackHandshake(s, true) {
		s.Close()
		return zero, net.ErrClosed
	}
	var (
		mem, peerDB []byte
		ok          bool
	)
	defer func() {
		t.trackHandshake(s, false)
		if !ok {
			s.Close()
			if mem != nil {
				unix.Munmap(mem)
			}
			if peerDB != nil {
				unix.Munmap(peerDB)
			}
		}
	}()
	s.SetDeadline(time.Now().Add(handshakeTimeout))
	fd, mem, err := createShared("erpc-shm", pageSize+2*t.ringSize)
	if err != nil {
		return zero, err
	}
	binary.LittleEndian.PutUint64(mem[hdrMagic:], memMagic)
	binary.LittleEndian.PutUint64(mem[hdrRing:], uint64(t.ringSize))
	hello := make([]byte, helloSize)
	binary.LittleEndian.PutUint64(hello, memMagic)
	binary.LittleEndian.PutUint64(hello[8:], uint64(t.ringSize))
	putAddr(hello[16:], t.local)
	_, _, err = s.WriteMsgUnix(hello, unix.UnixRights(fd, t.dbFD, t.bellFD), nil)
	unix.Close(fd) // the peer holds its own reference now; the mapping ours
	if err != nil {
		return zero, fmt.Errorf("shm: handshake: %w", err)
	}
	reply, fds, err := readMsg(s, 2)
	if err != nil {
		return zero, err
	}
	peer := getAddr(reply[16:])
	if binary.LittleEndian.Uint64(reply[8:]) == statusDuplicate {
		closeAll(fds)
		t.mu.Lock()
		live := t.liveLocked(peer)
		t.mu.Unlock()
		if live == nil {
			return zero, errDuplicate
		}
		t.remember(path, peer)
		return peer, nil
	}
	if len(fds) != 2 {
		closeAll(fds)
		return zero, errHandshake
	}
	peerDB, err = mapShared(fds[0], pageSize)
	unix.Close(fds[0])
	if err != nil {
		unix.Close(fds[1])
		return zero, err
	}
	s.SetDeadline(time.Time{})
	c := newConn(peer, s, mem, peerDB, t.ringSize, fds[1], true)
	if err := t.register(c); err != nil {
		unix.Close(c.peerBell)
		if errors.Is(err, errDuplicate) { // connected the other way meanwhile
			t.remember(path, peer)
			return peer, nil
		}
		return zero, err
	}
	ok = true
	t.remember(path, peer)
	return peer, nil
}

func (t *Transport) remember(path string, peer netip.AddrPort) {
	t.mu.Lock()
	t.paths[path] = peer
	t.known[peer] = path
	t.mu.Unlock()
}

// accept runs the listening side of the handshake on a new connection.
func (t *Transport) accept(s *net.UnixConn) error {
	s.SetDeadline(time.Now().Add(handshakeTimeout))
	hello, fds, err := readMsg(s, 3)
	if err != nil {
		return err
	}
	if len(fds) != 3 {
		closeAll(fds)
		return errHandshake
	}
	bell := fds[2]
	defer closeAll(fds[:2]) // the memfds; a connection keeps the bell
	ok := false
	defer func() {
		if !ok {
			unix.Close(bell)
		}
	}()
	ring, peer, err := parseHello(hello)
	if err != nil {
		return err
	}
	reply := make([]byte, helloSize)
	binary.LittleEndian.PutUint64(reply, memMagic)
	putAddr(reply[16:], t.local)
	mem, err := mapShared(fds[0], pageSize+2*ring)
	if err != nil {
		return err
	}
	// Each word read once: the peer may change them at any time.
	magic, r := binary.LittleEndian.Uint64(mem[hdrMagic:]), binary.LittleEndian.Uint64(mem[hdrRing:])
	if magic != memMagic || r != uint64(ring) {
		unix.Munmap(mem)
		return errHandshake
	}
	peerDB, err := mapShared(fds[1], pageSize)
	if err != nil {
		unix.Munmap(mem)
		return err
	}
	c := newConn(peer, s, mem, peerDB, ring, bell, false)
	ok = true // c owns the bell
	if err := t.register(c); err != nil {
		c.unmap()
		if errors.Is(err, errDuplicate) {
			binary.LittleEndian.PutUint64(reply[8:], statusDuplicate)
			s.WriteMsgUnix(reply, nil, nil)
		}
		return err
	}
	// From here the watcher owns s: a failed reply closes it and the
	// watcher reports the peer gone.
	s.SetDeadline(time.Time{})
	if _, _, err := s.WriteMsgUnix(reply, unix.UnixRights(t.dbFD, t.bellFD), nil); err != nil {
		s.Close()
	}
	return nil
}
