//go:build linux && !erpc_portable

package udp

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// Send writes msgs with as few system calls as it can: sendmmsg batches,
// and GSO trains for runs of equal-sized datagrams to one peer; with
// several paths, one batch per path, from that path's socket.
func (t *Transport) Send(msgs []transport.Message) error {
	if len(t.paths) == 0 {
		if t.solo.allowed {
			t.solo.check(t.rc, msgs, t.v6)
		}
		return t.sendOn(t.rc, msgs)
	}
	if t.byPath == nil {
		t.byPath = make([][]transport.Message, 1+len(t.paths))
	}
	for _, m := range msgs {
		p := int(m.Path)
		if p >= len(t.byPath) {
			p = 0
		}
		t.byPath[p] = append(t.byPath[p], m)
	}
	var err error
	for p, batch := range t.byPath {
		if len(batch) == 0 {
			continue
		}
		rc := t.rc
		if p > 0 {
			rc = t.paths[p-1].rc
		}
		if e := t.sendOn(rc, batch); e != nil && (err == nil || e == transport.ErrClosed) {
			err = e
		}
		clear(batch)
		t.byPath[p] = batch[:0]
	}
	return err
}

// sendOn sends msgs from one socket.
func (t *Transport) sendOn(rc syscall.RawConn, msgs []transport.Message) error {
	var err error
	for len(msgs) > 0 {
		used, tooLarge := t.build(msgs)
		if tooLarge {
			err = transport.ErrTooLarge
		}
		cerr := rc.Control(t.sendFn)
		for cerr == nil && t.txFull {
			// The socket buffer is full: wait until it drains rather
			// than drop what the protocol would only resend.
			if cerr = waitWritable(rc, t.closed.Load); cerr == nil {
				cerr = rc.Control(t.sendFn)
			}
		}
		if cerr != nil {
			t.clearTx()
			return transport.ErrClosed
		}
		if t.txGSOErr {
			// The kernel (or the device) refused a GSO train: send one
			// datagram per entry from now on, starting with the train.
			t.gso = false
			used = t.tx.first[t.txDone]
		}
		t.clearTx()
		msgs = msgs[used:]
	}
	return err
}

// build fills tx with entries for the head of msgs and returns how many
// messages it covered.
func (t *Transport) build(msgs []transport.Message) (used int, tooLarge bool) {
	tx := &t.tx
	tx.iovs = tx.iovs[:0]
	tx.first = tx.first[:0]
	e := 0
	i := 0
	for i < len(msgs) && e < batchSize {
		m := &msgs[i]
		size := m.Len()
		if size > MaxDatagram {
			tooLarge = true
			i++
			continue
		}
		h := &tx.hdrs[e].Hdr
		h.Namelen = encodeAddr(&tx.names[e], m.To, t.v6)
		if h.Namelen == 0 {
			i++ // unreachable from this socket's family: the network drops it
			continue
		}
		if t.solo.connected {
			h.Namelen = 0 // to the socket's peer (solo.check saw to it)
		}
		if cap(tx.iovs)-len(tx.iovs) < 2*maxGSOSegments {
			break // the iovecs are pointed into: they must never grow
		}
		start := len(tx.iovs)
		tx.first = append(tx.first, i)
		j, total := i, 0
		for j < len(msgs) && j-i < maxGSOSegments {
			n := &msgs[j]
			l := n.Len()
			// A GSO train is equal-sized datagrams (the last may be
			// shorter but not empty) to one peer, within one datagram's
			// worth of bytes.
			if j > i && (!t.gso || n.To != m.To || l > size || l == 0 || total+l > MaxDatagram) {
				break
			}
			tx.addIov(n.Head)
			tx.addIov(n.Payload)
			total += l
			j++
			if l < size {
				break // a shorter datagram ends a train
			}
		}
		if len(tx.iovs) > start {
			h.Iov = &tx.iovs[start]
		} else {
			h.Iov = nil // an empty datagram
		}
		h.SetIovlen(len(tx.iovs) - start)
		h.Control = nil
		h.SetControllen(0)
		if j-i > 1 {
			tx.putSegment(e, size)
		}
		e++
		i = j
	}
	tx.first = append(tx.first, i)
	t.txEnd, t.txDone, t.txGSOErr = e, 0, false
	return i, tooLarge
}

func (b *txBatch) addIov(p []byte) {
	if len(p) == 0 {
		return
	}
	b.iovs = append(b.iovs, unix.Iovec{Base: &p[0]})
	b.iovs[len(b.iovs)-1].SetLen(len(p))
}

// sendBatch sends entries txDone..txEnd, stopping early when the socket
// buffer is full (txFull) or the kernel refuses GSO (txGSOErr). The system
// calls never block, so they go in as raw system calls: the usual
// entersyscall/exitsyscall pair costs little, but its P hand-off under a
// busy-polling loop showed up as a second latency mode tens of µs slower.
func (t *Transport) sendBatch(fd uintptr) {
	t.txFull = false
	for t.txDone < t.txEnd {
		var n uintptr
		var errno syscall.Errno
		if t.txEnd-t.txDone == 1 && t.tx.first[t.txDone+1]-t.tx.first[t.txDone] == 1 {
			n, errno = t.tx.sendOne(fd, t.txDone)
		} else {
			n, _, errno = unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&t.tx.hdrs[t.txDone])),
				uintptr(t.txEnd-t.txDone), unix.MSG_DONTWAIT, 0, 0)
		}
		switch {
		case errno == 0:
			t.txDone += int(n)
		case errno == unix.EINTR:
		case errno == unix.EAGAIN:
			t.txFull = true
			return
		case t.tx.first[t.txDone+1]-t.tx.first[t.txDone] > 1 && (errno == unix.EIO || errno == unix.EINVAL):
			t.txGSOErr = true
			return
		default:
			// ENOBUFS, unreachable, refused: the network drops
			// this datagram; the protocol retransmits.
			t.txDone++
		}
	}
}

// clearTx drops the batch's pointers into the caller's buffers.
func (t *Transport) clearTx() {
	clear(t.tx.iovs)
	t.tx.iovs = t.tx.iovs[:0]
}
