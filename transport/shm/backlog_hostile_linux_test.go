//go:build linux

package shm

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// TestHostileBacklogStarvesHonest: the backlog bound (maxBacklog) was one
// for all connections. A peer that stops reading let what we send it fill
// that bound; then a datagram to an honest, live peer whose ring is full
// for a moment was dropped instead of waiting, although the transport
// reports itself Reliable (a live peer gets every datagram once and in
// order), on which the engine runs its sessions without retransmission.
// Now a connection's backlog holds at most maxConnBacklog: the one that
// stops reading is dropped from (asserted), the honest one never.
func TestHostileBacklogStarvesHonest(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	p, st, err := rawDial(path, minRingSize, rawOpts{bell: -1, seals: sealsNeeded})
	if p == nil {
		t.Fatalf("hostile handshake: %s %v", st, err)
	}
	defer func() { unix.Close(p.sock); unix.Munmap(p.mem) }()
	honest, err := Listen("", Options{RingSize: minRingSize})
	if err != nil {
		t.Fatal(err)
	}
	defer honest.Close()
	if _, err := honest.Resolve(path); err != nil {
		t.Fatal(err)
	}
	waitConns(t, tr, 2)
	var hostileAddr netip.AddrPort
	for _, c := range tr.snap.Load().conns {
		if c.peer() != honest.LocalAddr() {
			hostileAddr = c.peer()
		}
	}
	chunk := make([]byte, 4<<10)
	for range maxBacklog/len(chunk) + 32 { // the hostile peer never reads
		tr.Send([]transport.Message{{To: hostileAddr, Head: chunk}})
	}
	const n = 64 // more than the honest peer's 64 KiB ring holds at once
	for i := range n {
		chunk[0] = byte(i)
		tr.Send([]transport.Message{{To: honest.LocalAddr(), Head: chunk}})
	}
	got := 0
	for end := time.Now().Add(3 * time.Second); got < n && time.Now().Before(end); {
		if k, _ := honest.Receive(func(_ netip.AddrPort, d []byte) {
			if int(d[0]) != got%256 {
				t.Fatalf("datagram %d arrived as %d", got, d[0])
			}
			got++
		}); k == 0 {
			tr.Receive(func(netip.AddrPort, []byte) {}) // the listener's loop: moves the backlog
			honest.Wait(time.Now().Add(time.Millisecond))
		}
	}
	if got != n {
		t.Fatalf("the honest peer got %d of %d datagrams (%d dropped in all)", got, n, tr.Stats().Dropped)
	}
	if d := tr.Stats().Dropped; d == 0 {
		t.Fatal("nothing dropped: the peer that stops reading was never over its bound")
	}
}

// TestHostileBacklogsShareFairly: several peers stop reading while an
// honest one reads; datagrams of seeded random sizes go to all of them in
// random order, far more than the backlog bounds to the stopped ones. The
// backlogs never pass their bounds (one connection's, all together); the
// drops fall on the stopped peers' largest backlogs, and the honest peer,
// which reads now and then (its ring fills between: asserted), and whose
// backlog stays smaller than theirs, gets every datagram in order.
func TestHostileBacklogsShareFairly(t *testing.T) {
	// A small ring of the listener's (its ring to each peer is the larger
	// of the peer's and its own), so that the honest peer's fills.
	tr, path := hostileListener(t, Options{RingSize: 128 << 10})
	const stopped = 3
	for range stopped {
		p, st, err := rawDial(path, minRingSize, rawOpts{bell: -1, seals: sealsNeeded})
		if p == nil {
			t.Fatalf("hostile handshake: %s %v", st, err)
		}
		defer func() { unix.Close(p.sock); unix.Munmap(p.mem) }()
	}
	honest, err := Listen("", Options{RingSize: minRingSize})
	if err != nil {
		t.Fatal(err)
	}
	defer honest.Close()
	if _, err := honest.Resolve(path); err != nil {
		t.Fatal(err)
	}
	waitConns(t, tr, stopped+1)
	var hostile []netip.AddrPort
	var hc *conn // the listener's connection to the honest peer
	for _, c := range tr.snap.Load().conns {
		if c.peer() != honest.LocalAddr() {
			hostile = append(hostile, c.peer())
		} else {
			hc = c
		}
	}
	r := rand.New(rand.NewPCG(4, 27))
	buf := make([]byte, tr.MaxDatagram())
	sent, got, waited := 0, 0, 0
	receive := func() {
		honest.Receive(func(_ netip.AddrPort, d []byte) {
			if len(d) < 4 || int(binary.LittleEndian.Uint32(d)) != got {
				t.Fatalf("honest datagram %d arrived as %d (%d bytes)", got, binary.LittleEndian.Uint32(d), len(d))
			}
			got++
		})
	}
	for range 4 * maxBacklog / (tr.MaxDatagram() / 2) {
		n := 4 + r.IntN(tr.MaxDatagram()-3)
		if r.IntN(8) == 0 { // to the honest peer, which reads now and then
			binary.LittleEndian.PutUint32(buf, uint32(sent))
			tr.Send([]transport.Message{{To: honest.LocalAddr(), Head: buf[:4<<10+n%(4<<10)]}})
			sent++
			if !hc.backlog.empty() {
				waited++ // its ring was full: the datagram waits in the backlog
			}
		} else {
			tr.Send([]transport.Message{{To: hostile[r.IntN(stopped)], Head: buf[:n]}})
		}
		if r.IntN(64) == 0 { // now and then: its ring fills between
			receive()
		}
		if tr.backlogBytes > maxBacklog {
			t.Fatalf("backlogs hold %d bytes, bound %d", tr.backlogBytes, maxBacklog)
		}
		for _, c := range tr.snap.Load().conns {
			if c.backlog.bytes > maxConnBacklog {
				t.Fatalf("a backlog holds %d bytes, bound %d", c.backlog.bytes, maxConnBacklog)
			}
		}
	}
	for end := time.Now().Add(5 * time.Second); got < sent && time.Now().Before(end); {
		tr.Receive(func(netip.AddrPort, []byte) {}) // moves the backlog
		receive()
	}
	st := tr.Stats()
	if got != sent {
		t.Fatalf("the honest peer got %d of %d datagrams (%+v)", got, sent, st)
	}
	if st.Dropped == 0 || tr.backlogBytes < maxBacklog/2 || waited == 0 {
		t.Fatalf("the stopped peers never filled the backlogs (%+v, %d bytes held), or the honest peer's ring was never full (%d waited)", st, tr.backlogBytes, waited)
	}
	t.Logf("%d honest datagrams (%d waited for room), all delivered; %+v", sent, waited, st)
}
