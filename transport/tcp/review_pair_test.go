package tcp_test

import (
	"sync"
	"testing"

	"github.com/erpc-go/erpc/transport"
)

// TestReviewMutualDialFrom: two listening transports that send to each
// other at the same instant (the case the package doc says keeps two
// connections, "each side sending on the one it dialed"). The engine
// matches a packet to its session by the address it came from, so each
// side must hear the other from the other's LocalAddr, the address it
// sends to: otherwise an answer to a session comes from an address the
// session does not know. TestOneConnectionPerPair checks only the IP.
func TestReviewMutualDialFrom(t *testing.T) {
	for round := range 40 {
		c, d := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
		var wg sync.WaitGroup
		wg.Go(func() { c.Send([]transport.Message{{To: d.LocalAddr(), Head: []byte("cd")}}) })
		wg.Go(func() { d.Send([]transport.Message{{To: c.LocalAddr(), Head: []byte("dc")}}) })
		wg.Wait()
		fd, fc := recvFrom(t, d), recvFrom(t, c)
		if fd != c.LocalAddr() || fc != d.LocalAddr() {
			t.Fatalf("round %d: d heard c (%v) from %v, c heard d (%v) from %v; claims failed %d/%d",
				round, c.LocalAddr(), fd, d.LocalAddr(), fc, c.Stats().ClaimFailed, d.Stats().ClaimFailed)
		}
		c.Close()
		d.Close()
	}
}
