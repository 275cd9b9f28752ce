//go:build !linux || erpc_portable

package tcp

import (
	"net/netip"
	"sync"
	"sync/atomic"
)

// inbox holds the frames the connections' readers have read until the
// loop's Receive takes them: their bytes back to back in an arena, and
// where each is. Receive swaps the arena for the spare one under the lock
// and delivers outside it, so a reader waits for the lock for the length
// of a swap, never of a delivery. Past maxInbox bytes the readers wait for
// the next swap (TCP's flow control then holds the peers back): the
// memory a transport holds for frames is two arenas, whatever arrives.
// maxInbox is the bytes of frames read but not yet taken by Receive, all
// connections together.
const maxInbox = 32 << 20

type inbox struct {
	mu     sync.Mutex
	room   sync.Cond // Receive took the arena, or the transport closed
	arena  []byte
	recs   []frameRec
	spare  []byte
	spareR []frameRec
	closed bool
	n      atomic.Int32 // len(recs), read without the lock
}

type frameRec struct {
	from netip.AddrPort
	off  int
	n    int
}

func (in *inbox) init() { in.room.L = &in.mu }

// pending reports whether frames wait for Receive.
func (in *inbox) pending() bool { return in.n.Load() != 0 }

// put appends the whole frames at the start of buf, read from peer from,
// waiting first while the inbox is over its bound, and returns how many
// bytes they took (parseFrames). It reports whether the inbox was empty
// before (the loop may be asleep) and false for ok when the transport
// closed.
func (in *inbox) put(from netip.AddrPort, buf []byte) (used int, wasEmpty, ok bool, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for len(in.arena) > maxInbox && !in.closed {
		in.room.Wait()
	}
	if in.closed {
		return 0, false, false, nil
	}
	wasEmpty = len(in.recs) == 0
	used, err = parseFrames(buf, MaxDatagram, func(d []byte) {
		in.recs = append(in.recs, frameRec{from: from, off: len(in.arena), n: len(d)})
		in.arena = append(in.arena, d...)
	})
	in.n.Store(int32(len(in.recs)))
	return used, wasEmpty, true, err
}

// take passes every frame waiting to fn and returns how many.
func (in *inbox) take(fn func(netip.AddrPort, []byte)) int {
	if in.n.Load() == 0 {
		return 0
	}
	in.mu.Lock()
	arena, recs := in.arena, in.recs
	in.arena, in.recs = in.spare[:0], in.spareR[:0]
	in.n.Store(0)
	in.room.Broadcast()
	in.mu.Unlock()
	for _, r := range recs {
		fn(r.from, arena[r.off:r.off+r.n:r.off+r.n])
	}
	in.spare, in.spareR = arena[:0], recs[:0]
	return len(recs)
}

// close releases the readers waiting for room.
func (in *inbox) close() {
	in.mu.Lock()
	in.closed = true
	in.room.Broadcast()
	in.mu.Unlock()
}
