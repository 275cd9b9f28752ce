//go:build linux

package shm

import (
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// TestHostileBacklogStarvesHonest: the backlog bound (maxBacklog) is one
// for all connections. A peer that stops reading lets what we send it fill
// that bound; then a datagram to an honest, live peer whose ring is full
// for a moment is dropped instead of waiting, although the transport
// reports itself Reliable (a live peer gets every datagram once and in
// order), on which the engine runs its sessions without retransmission.
func TestHostileBacklogStarvesHonest(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	p, st, err := rawDial(path, minRingSize, rawOpts{bell: -1, seals: unix.F_SEAL_SHRINK | unix.F_SEAL_GROW})
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
}
