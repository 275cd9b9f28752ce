//go:build linux

package shm

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// The table of connections: the loop's snapshot of it, registration,
// the watchers of each connection's socket and the accept loop.

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

// PeerCreds is the credentials of the process at addr as the kernel gave
// them (SO_PEERCRED) when its connection was made: for a connector, the
// process that connected; for a listener dialed, the one that listens
// (transport.PeerCreder). False if no live connection has that address.
func (t *Transport) PeerCreds(addr netip.AddrPort) (pid int32, uid, gid uint32, ok bool) {
	s := t.snap.Load()
	if s == nil {
		return 0, 0, 0, false
	}
	c := s.byAddr[addr]
	if c == nil || !c.hasCred || c.dead.Load() {
		return 0, 0, 0, false
	}
	return c.cred.Pid, c.cred.Uid, c.cred.Gid, true
}
