//go:build linux

package shm

import (
	"time"

	"github.com/erpc-go/erpc/transport"
)

// A shared-memory peer is reliable (transport.Reliable): while it lives,
// every datagram reaches it once and in order, which lets the engine run
// its sessions over shm without retransmission timers (the lean path). A
// datagram that finds the peer's ring full waits in the connection's
// backlog, in this process's memory, and enters the ring ahead of any
// later one as the peer frees room: each Receive and Send moves what fits,
// and Wait sleeps at most backlogRetry while anything waits.
//
// A peer that stops reading (hung or hostile, not dead: death closes its
// socket) could make its backlog grow with new sessions and requests, so
// backlogs are bounded: each connection's at maxConnBacklog bytes (a
// datagram beyond is dropped and counted), all together at maxBacklog.
// The bytes counted are those held: each datagram's buffer (its capacity,
// at least minBacklogBuf) and its entry in the queue (backlogEntry), so a
// flood of tiny datagrams is bounded by memory, not by datagram bytes.
// When a datagram does not fit in the total, room is made by dropping the
// newest datagrams of the largest backlog, unless the datagram's own
// connection has the largest: then the datagram is dropped. So one
// connection that stops reading can never cause a drop to another (their
// two backlogs, at most maxConnBacklog each, fit in the total), and
// several can only cause drops to a connection whose backlog is larger
// than each of theirs. A reading peer's backlog stays small: the engine's
// credits bound each session to 32 packets in flight, which the peer's
// ring mostly holds. The sessions to a peer that stopped reading end by
// their failure timeout, since it answers nothing either.
const (
	backlogRetry   = 100 * time.Microsecond
	maxBacklog     = 64 << 20
	maxConnBacklog = maxBacklog / 2

	minBacklogBuf = 256 // the smallest buffer a datagram is copied into
	backlogEntry  = 32  // a queue entry: the buffer's slice header and its head's length
)

// held is what a queued buffer costs against the bounds.
func held(buf []byte) int { return cap(buf) + backlogEntry }

// backlog is a connection's queue of datagrams waiting for ring space,
// owned by the event loop: q[head:] in order, holding bytes (see held).
type backlog struct {
	q     []queued
	head  int
	bytes int
}

// queued is one datagram in a backlog: its head and payload joined in b,
// the head's length kept so that the ring record it becomes has its body
// on a cache line, as a datagram written straight into the ring has.
type queued struct {
	b    []byte
	head int
}

func (b *backlog) empty() bool { return b.head == len(b.q) }

// queueBacklog queues m for c, copied into a spare buffer, or drops it
// (see maxBacklog).
func (t *Transport) queueBacklog(c *conn, m *transport.Message) {
	n := m.Len()
	size := max(n, minBacklogBuf)
	// A spare is reused only if it is not much larger than needed: it
	// counts at its capacity.
	k := len(t.spare)
	reuse := k > 0 && cap(t.spare[k-1]) >= n && cap(t.spare[k-1]) <= 2*size
	if reuse {
		size = cap(t.spare[k-1])
	}
	cost := size + backlogEntry
	if c.backlog.bytes+cost > maxConnBacklog || !t.makeBacklogRoom(c, cost) {
		t.dropped.Add(1)
		return
	}
	var buf []byte
	if reuse {
		buf, t.spare = t.spare[k-1][:0], t.spare[:k-1]
	} else {
		buf = make([]byte, 0, size)
	}
	buf = append(append(buf, m.Head...), m.Payload...)
	if c.backlog.empty() {
		t.backlogged++
	}
	c.backlog.q = append(c.backlog.q, queued{buf, len(m.Head)})
	c.backlog.bytes += held(buf)
	t.backlogBytes += held(buf)
	t.backlogs.Add(1)
}

// makeBacklogRoom makes room for n more bytes of c's in the backlogs,
// dropping the newest datagrams of the largest backlog while it is larger
// than c's; false if c's is the largest.
func (t *Transport) makeBacklogRoom(c *conn, n int) bool {
	for t.backlogBytes+n > maxBacklog {
		var big *conn
		for _, o := range t.snap.Load().conns {
			if o != c && (big == nil || o.backlog.bytes > big.backlog.bytes) {
				big = o
			}
		}
		if big == nil || big.backlog.bytes <= c.backlog.bytes {
			return false
		}
		t.dropNewest(big)
	}
	return true
}

// dropNewest drops the last datagram of c's backlog, which is not empty.
func (t *Transport) dropNewest(c *conn) {
	b := &c.backlog
	d := b.q[len(b.q)-1].b
	b.q[len(b.q)-1] = queued{}
	b.q = b.q[:len(b.q)-1]
	b.bytes -= held(d)
	t.backlogBytes -= held(d)
	t.dropped.Add(1)
	if len(t.spare) < 64 {
		t.spare = append(t.spare, d[:0])
	}
	if b.empty() {
		b.q, b.head = b.q[:0], 0
		t.backlogged--
	}
}

// flush moves c's backlog into its ring while there is room and reports
// whether the backlog is empty now. A dead connection's backlog is
// discarded: nobody will read it.
func (t *Transport) flush(c *conn) bool {
	b := &c.backlog
	if b.empty() {
		return true
	}
	dead := c.dead.Load()
	moved := false
	for !b.empty() {
		e := b.q[b.head]
		d := e.b
		if !dead && !c.out.put(d[:e.head], d[e.head:]) {
			break
		}
		b.q[b.head] = queued{}
		b.head++
		moved = true
		b.bytes -= held(d)
		t.backlogBytes -= held(d)
		if len(t.spare) < 64 {
			t.spare = append(t.spare, d[:0])
		}
	}
	if moved && !dead {
		c.ringPeer()
	}
	if b.empty() {
		clear(b.q)
		b.q, b.head = b.q[:0], 0
		t.backlogged--
		return true
	}
	if b.head*2 >= len(b.q) {
		// A backlog that never quite empties must not grow its slice
		// with every datagram it ever held.
		n := copy(b.q, b.q[b.head:])
		clear(b.q[n:])
		b.q, b.head = b.q[:n], 0
	}
	return false
}

// flushAll moves every backlog that it can.
func (t *Transport) flushAll() {
	if t.backlogged == 0 {
		return
	}
	for _, c := range t.snap.Load().conns {
		t.flush(c)
	}
}

// Reliable reports that datagrams to a live peer are never lost,
// duplicated or reordered (transport.Reliable).
func (t *Transport) Reliable() bool { return true }
