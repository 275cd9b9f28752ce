//go:build linux

package shm

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// TestHostileBacklogMemoryOfSmallDatagrams: a connection's backlog is
// promised to hold at most maxConnBacklog (32 MiB), but it is counted in
// datagram bytes while each queued datagram costs a buffer of at least 256
// bytes (plus its slice header). A peer that stops reading and makes us
// answer it with small datagrams gets 32 MiB of *counted* bytes, i.e.
// ~9 GiB of real memory for 1-byte datagrams. Here 150k 1-byte datagrams
// (150 KB counted, far below the bound: none dropped) already hold more
// than 32 MiB. (A reused spare of 256 KiB, counted as its datagram's 1
// byte, makes it worse still.)
func TestHostileBacklogMemoryOfSmallDatagrams(t *testing.T) {
	// A small ring of the listener's (its ring to the peer is the larger
	// of the peer's and its own): the datagrams must go to the backlog.
	tr, path := hostileListener(t, Options{RingSize: minRingSize})
	p, st, err := rawDial(path, minRingSize, rawOpts{bell: -1, seals: sealsNeeded})
	if p == nil {
		t.Fatalf("hostile handshake: %s %v", st, err)
	}
	defer func() { unix.Close(p.sock); unix.Munmap(p.mem) }()
	waitConns(t, tr, 1)
	c := tr.snap.Load().conns[0]
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	one := []byte{1}
	const n = 150_000
	msgs := make([]transport.Message, 1000)
	for i := range msgs {
		msgs[i] = transport.Message{To: c.peer(), Head: one}
	}
	for range n / len(msgs) { // the peer never reads
		tr.Send(msgs)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := 0
	for _, d := range c.backlog.q[c.backlog.head:] {
		held += cap(d.b) + backlogEntry // the buffer and its entry in q
	}
	if tr.Stats().Backlogged == 0 {
		t.Fatal("nothing went to the backlog")
	}
	t.Logf("counted backlog %d bytes (bound %d), dropped %d, buffers held %d bytes, heap grew %d bytes",
		c.backlog.bytes, maxConnBacklog, tr.Stats().Dropped, held, int64(after.HeapAlloc)-int64(before.HeapAlloc))
	if held > maxConnBacklog {
		t.Errorf("one non-reading peer's backlog holds %.1f MiB of memory (bound %d MiB), counted as %d bytes: the bound counts datagram bytes, not memory",
			float64(held)/(1<<20), maxConnBacklog>>20, c.backlog.bytes)
	}
}
