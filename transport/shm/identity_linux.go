//go:build linux

package shm

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A peer's address, as the engine sees it, comes from the kernel, never
// from what the peer says. The connector names the listener by the path
// it dialed (listenerAddr of that path: whoever listens there is that
// endpoint). The listener reads the connector's credentials from its
// socket (SO_PEERCRED: the pid at connect time, which the connector
// cannot choose) and takes the address claimed in the hello only when the
// kernel vouches for it:
//
//   - a client address (fd65:7368:1::/48) holds its process's pid in bytes
//     6 to 9 and the low 32 bits of the process's start time (in clock
//     ticks since boot, /proc/<pid>/stat) in bytes 10 to 13: it is taken
//     if that is the connector's pid and the start time of the process
//     that has that pid now. A process that gets a dead client's pid
//     started later, so it cannot take the dead client's address, unless
//     it started in the same clock tick (10 ms: the client must have lived
//     less than that, and the pid come free and been taken within it) or
//     a multiple of 2^32 ticks later (497 days at 100 Hz);
//     bytes 14 and 15 tell apart the client transports of one process;
//   - a listener address (fd65:7368:0::/48) comes with the absolute path of
//     the connector's listening socket: it is taken if it is that path's
//     address, the socket file belongs to the connector's user, and the
//     process listening there (SO_PEERCRED of a connection made to it,
//     closed at once) is the connector.
//
// Any other claim, or one the kernel cannot check (pid 0: a process
// outside our pid namespace; a listening socket we cannot reach), gets an
// address the listener assigns: fd65:7368:2::/48, the connector's pid and
// a counter of the listener's, never given twice. So no process can be
// taken for another: live processes' pids differ, a dead one's pid taken
// by another comes with another start time, and an assigned address is
// unique.

// Address prefixes: bytes 4 and 5 of fd65:7368:X::.
const (
	kindListener = 0
	kindClient   = 1
	kindAssigned = 2
)

// maxSockPath is the longest path a unix socket address holds.
const maxSockPath = 107

func shmAddr(kind byte, pid uint32, rest uint64) netip.AddrPort {
	a := [16]byte{0xfd, 0x65, 0x73, 0x68, 0, kind}
	binary.BigEndian.PutUint32(a[6:], pid)
	binary.BigEndian.PutUint16(a[10:], uint16(rest>>32))
	binary.BigEndian.PutUint32(a[12:], uint32(rest))
	return netip.AddrPortFrom(netip.AddrFrom16(a), 1)
}

// addrKind returns the kind of a transport address and the pid it holds
// (ok false if it is none of ours).
func addrKind(a netip.AddrPort) (kind byte, pid uint32, ok bool) {
	b := a.Addr().As16()
	if !a.Addr().Is6() || a.Addr().Is4In6() || a.Port() != 1 || b[0] != 0xfd || b[1] != 0x65 || b[2] != 0x73 || b[3] != 0x68 || b[4] != 0 {
		return 0, 0, false
	}
	return b[5], binary.BigEndian.Uint32(b[6:]), true
}

// clientAddr is a fresh address for a client-only transport: our pid, our
// start time's low 32 bits (what a listener checks) and 16 bits of a
// counter of the process's, from a random start.
func clientAddr() netip.AddrPort {
	pid := os.Getpid()
	start, _ := startTime(int32(pid)) // 0 if unknown: no listener will vouch for it
	return shmAddr(kindClient, uint32(pid), uint64(start)<<16|uint64(uint16(clientSeq.Add(1))))
}

var clientSeq = func() *atomic.Uint32 {
	var r [4]byte
	rand.Read(r[:])
	var n atomic.Uint32
	n.Store(binary.LittleEndian.Uint32(r[:]))
	return &n
}()

// startTime returns the low 32 bits of the start time of the process with
// pid, in clock ticks since boot (field 22 of /proc/<pid>/stat).
func startTime(pid int32) (uint32, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold anything but this
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:])) // from field 3, the state
	if len(f) < 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, false
	}
	return uint32(n), true
}

// clientOf reports whether a client address names the process pid: its
// pid, and its start time (so not a dead process whose pid it got).
func clientOf(a netip.AddrPort, pid int32) bool {
	kind, p, ok := addrKind(a)
	if !ok || kind != kindClient || p != uint32(pid) {
		return false
	}
	b := a.Addr().As16()
	start, ok := startTime(pid)
	return ok && binary.BigEndian.Uint32(b[10:]) == start
}

// peerCred returns the credentials of the process at the other end of s,
// as the kernel recorded them when it connected.
func peerCred(s *net.UnixConn) (*unix.Ucred, error) {
	rc, err := s.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	cerr := rc.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cerr != nil {
		return nil, cerr
	}
	return cred, err
}

// listeningCred returns the credentials of the process listening on the
// unix socket at path, if the socket file belongs to uid: it connects
// (without blocking: a full backlog is a failure) and closes at once,
// sending nothing. The owner check (uid -1: none, for a path we dial
// ourselves) keeps a connector from making us probe sockets other than its
// own user's.
func listeningCred(path string, uid int64) (*unix.Ucred, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || (uid >= 0 && int64(st.Uid) != uid) {
		return nil, errNotOwnSocket
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// The process listening there may be anyone's: it must not queue
	// descriptors for us, whose release would hold this close.
	setPassRights(fd, false)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return nil, err
	}
	return unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
}

var errNotOwnSocket = errors.New("shm: not a socket of the connector's user")

// validSockPath reports whether a path claimed in a hello can name a
// listening socket: absolute, clean, short enough, no NUL.
func validSockPath(p string) bool {
	return len(p) <= maxSockPath && filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// connectorAddr returns the address by which the listener knows a
// connector whose socket carries cred and whose hello claims claim (and,
// for a listener address, the listening socket sock); verified says that
// the claim was taken.
//
// A listener address is taken with its directory watched (gen is the
// watch's event count before the check): the caller gives it to the
// connection, or drops it with unwatch. Its check runs in a probe
// (probe_linux.go): one that does not answer by deadline fails the
// handshake (err), and one that cannot start (too many in flight) leaves
// the claim unverified.
func (t *Transport) connectorAddr(cred *unix.Ucred, claim netip.AddrPort, sock string, deadline time.Time) (addr netip.AddrPort, verified bool, gen uint64, err error) {
	if cred.Pid > 0 {
		switch kind, pid, ok := addrKind(claim); {
		case !ok:
		case kind == kindClient && pid == uint32(cred.Pid):
			if clientOf(claim, cred.Pid) {
				return claim, true, 0, nil
			}
		case kind == kindListener && sock != "" && validSockPath(sock):
			if a, err := listenerAddr(sock); err != nil || a != claim {
				break
			}
			ok, err := t.probe(deadline, func() bool {
				g, err := claimedDirs.add(t, sock) // before the check: a change after it is seen
				if err != nil {
					return false // a claim we cannot keep an eye on is not taken
				}
				if lc, err := listeningCred(sock, int64(cred.Uid)); err == nil && lc.Pid == cred.Pid && lc.Uid == cred.Uid {
					gen = g
					return true
				}
				claimedDirs.remove(t, sock)
				return false
			}, func(ok bool) {
				if ok {
					claimedDirs.remove(t, sock)
				}
			})
			if errors.Is(err, errProbeTimeout) {
				return addr, false, 0, err
			}
			if ok {
				return claim, true, gen, nil
			}
		}
	}
	t.unverified.Add(1)
	return shmAddr(kindAssigned, uint32(max(cred.Pid, 0)), t.assigned.Add(1)), false, 0, nil
}

// unwatch drops c's use of its claimed path's directory watch.
func (t *Transport) unwatch(c *conn) {
	if c.claimedPath != "" {
		claimedDirs.remove(t, c.claimedPath)
	}
}

// A listener address names whoever listens at its path, which changes: a
// process that listened on a free path, connected (its claim vouched for)
// and gave the path up must not keep the address when another process
// listens there. The kernel tells nobody when a socket stops listening, so
// a connection's listener address is checked again whenever it may have
// changed hands: when the name in its directory changes (for a claim we
// took, identity_watch_linux.go), when a new connection is known by the
// same address (a claim the kernel vouched for just now, or our own dial of
// the path), and when Resolve names the path. A connection that fails the
// check loses the address (revokeLocked).

// supersedes reports whether the new connection c takes the address of
// old, an open connection known by the same address: both were made to
// (or by) the process listening at the address's path, c just now, and
// they name different processes, so old's no longer listens there. The
// same process connecting twice is a duplicate. No process can take the
// address of a connection whose process still listens at the path: the
// kernel vouched for c's, and only one socket is bound at a path.
func supersedes(c, old *conn) bool {
	return c.listenPid > 0 && old.listenPid > 0 && c.listenPid != old.listenPid
}

// revokeLocked takes its listener address from old, whose process no
// longer listens at the path: from now on it is known by an address we
// assign (like an unverified connector), so what it sends arrives from
// that address, and what we send to the listener address goes to whoever
// has it now. If nobody has it, GonePeers reports it. t.mu is held; the
// caller publishes the change.
func (t *Transport) revokeLocked(old *conn) {
	prev := old.peer()
	if kind, _, _ := addrKind(prev); kind != kindListener {
		return // lost already
	}
	a := shmAddr(kindAssigned, uint32(max(old.listenPid, 0)), t.assigned.Add(1))
	old.addr.Store(&a)
	t.revoked.Add(1)
	t.unreachable = append(t.unreachable, prev)
	t.gone.Store(true)
}

// revokeListener takes the listener address a from the open connection
// known by it unless its process is pid, the one that listens at a's path
// now (0: nobody listens there).
func (t *Transport) revokeListener(a netip.AddrPort, pid int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.liveLocked(a); old != nil && old.listenPid > 0 && old.listenPid != pid {
		t.revokeLocked(old)
		t.publishLocked()
	}
}

// resolved returns the address of the connection open to the listener at
// path, if there is one and its process still listens there (asked of the
// kernel: connect, SO_PEERCRED, close); one whose process does not is
// dropped, for Resolve to dial the path again. A check that does not
// answer (probe_linux.go) keeps the connection.
func (t *Transport) resolved(path string) (netip.AddrPort, bool) {
	t.mu.Lock()
	a, ok := t.paths[path]
	c := t.liveLocked(a)
	t.mu.Unlock()
	if !ok || c == nil {
		return a, false
	}
	if c.listenPid <= 0 {
		return a, true // the kernel did not say who listened (another pid namespace)
	}
	var pid int32
	known, err := t.probe(time.Now().Add(handshakeTimeout), func() bool {
		cred, err := listeningCred(path, -1)
		if err == nil {
			pid = cred.Pid
		}
		// Nobody listens there; anything else (a full backlog, no
		// permission) says nothing.
		return err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, errNotOwnSocket)
	}, nil)
	if err != nil || !known || pid == c.listenPid {
		return a, true // the same process, or no answer: keep it
	}
	t.revokeListener(a, pid)
	return a, false
}

// dialWatch is the watch of a dialed path's directory, taken before the
// connect: the connection it makes keeps the listener address of the path
// only while the name there stays the same, like a claim we took
// (identity_watch_linux.go), so a process that listened there, was dialed
// and gave the path up loses the address as soon as the name goes.
type dialWatch struct {
	path string // absolute
	gen  uint64
	ok   bool
}

func (t *Transport) watchDialed(path string) *dialWatch {
	abs, err := filepath.Abs(path)
	if err != nil || !validSockPath(abs) {
		return &dialWatch{}
	}
	gen, err := claimedDirs.add(t, abs)
	return &dialWatch{path: abs, gen: gen, ok: err == nil}
}

// drop gives the watch up unless a connection took it (then unwatch does).
func (w *dialWatch) drop(t *Transport) {
	if w.ok {
		claimedDirs.remove(t, w.path)
		w.ok = false
	}
}

// adoptDuplicate handles a "duplicate" answer to our dial of a path: the
// listener there has an open connection to us. If we know that connection
// by its listener address, that is the peer. If we know it by an address
// we assigned (its claim went unchecked: the probe slots were full), the
// dial itself vouches for it now: the kernel says which process listens
// at the path (SO_PEERCRED of our socket), and if that is the process
// that made the connection (its pid and start time), the connection takes
// the path's listener address, with the path's directory watched (w). It
// reports whether a connection is known by peer now.
func (t *Transport) adoptDuplicate(s *net.UnixConn, peer netip.AddrPort, w *dialWatch) bool {
	t.mu.Lock()
	live := t.liveLocked(peer)
	t.mu.Unlock()
	if live != nil {
		return true
	}
	cred, err := peerCred(s)
	if err != nil || cred.Pid <= 0 {
		return false
	}
	start, ok := startTime(cred.Pid)
	if !ok {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() || t.liveLocked(peer) != nil {
		return !t.closed.Load()
	}
	for _, c := range t.conns {
		kind, pid, _ := addrKind(c.peer())
		if c.dead.Load() || kind != kindAssigned || pid != uint32(cred.Pid) || c.peerStart != start || c.claimedPath != "" {
			continue
		}
		c.addr.Store(&peer)
		c.listenPid = cred.Pid
		if w.ok {
			c.claimedPath, c.claimedUid = w.path, cred.Uid
			w.ok = false // c holds the watch now: unwatch drops it
		}
		t.publishLocked()
		return true
	}
	return false
}
