//go:build linux

package shm

import (
	"errors"
	"net"
	"net/netip"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// The loop's side of the transport: Receive, Send, Poll, Wait and Wake.

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
