package erpc_test

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/stream"
	"github.com/erpc-go/erpc/transport/memnet"
)

// TestParkedReleasedHoweverTheSessionEnds (r): clients with idle
// streams, some parking more exchanges by hand than erpc's client does
// (beyond the two a session the server keeps), end in random ways: the
// session's Close, its endpoint's Close, the stream's cancel (the
// session lives on without streams), or a partition that the server's
// idle timeout ends. Parked requests never exceed two a session, and
// once every client is gone the server holds none; its Shutdown then
// finishes.
func TestParkedReleasedHoweverTheSessionEnds(t *testing.T) {
	checkLeaks(t)
	var kinds [4]int
	hostile := 0
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 13))
		srv := erpc.NewServer()
		must(t, srv.HandleStream("Idle", func(s erpc.ServerStream) error {
			<-s.Context().Done()
			return nil
		}))
		n := newMemNet()
		sep := n.Listen(t, srv, erpc.WithKeepalive(20*time.Millisecond, 200*time.Millisecond))
		addr := func(ep *erpc.Endpoint) netip.AddrPort { return netip.MustParseAddrPort(ep.Addr().String()) }
		const clients = 5
		ends := make([]func(), 0, clients)
		var cancels []context.CancelFunc
		for i := range clients {
			cep := n.Listen(t, nil, erpc.WithKeepalive(20*time.Millisecond, 200*time.Millisecond), erpc.WithFailureTimeout(time.Second))
			sess := dialT(t, n, cep, sep)
			ctx, cancel := context.WithCancel(context.Background())
			cancels = append(cancels, cancel)
			if _, err := sess.NewStream(ctx, "Idle"); err != nil {
				t.Fatal(err)
			}
			if i%2 == 1 { // a hostile extra: parks by hand, for a stream it never opened
				for range 1 + rng.IntN(3) {
					req := append([]byte{1}, stream.AppendData(nil, 99, 0, []byte("x"))...)
					go func() { _, _ = sess.Call(ctx, "erpc.stream/exchange", req, nil) }()
				}
			}
			kind := rng.IntN(4)
			kinds[kind]++
			switch kind {
			case 0:
				ends = append(ends, func() { sess.Close() })
			case 1:
				ends = append(ends, func() { cep.Close() })
			case 2:
				ends = append(ends, cancel)
			case 3:
				ends = append(ends, func() {
					n.net.SetLink(addr(cep), addr(sep), memnet.LinkConfig{Down: true})
					n.net.SetLink(addr(sep), addr(cep), memnet.LinkConfig{Down: true})
				})
			}
		}
		waitFor(t, "the streams open", func() bool { return sep.StreamStats().Opened == clients })
		waitFor(t, "the hand-parked exchanges in", func() bool { return sep.StreamStats().Refused >= clients/2 })
		hostile += int(sep.StreamStats().Refused)
		// A displaced exchange's answer goes through the loop's command
		// queue: the count settles to two a session within a turn.
		waitFor(t, "two parked a session at most", func() bool { return sep.Stats().ParkedRequests <= 2*clients })
		for _, end := range ends {
			end()
		}
		waitFor(t, "no parked request left", func() bool {
			st := sep.Stats()
			if st.ParkedRequests < 0 || st.HeldRequests < st.ParkedRequests {
				t.Fatalf("seed %d: held %d, parked %d", seed, st.HeldRequests, st.ParkedRequests)
			}
			return st.HeldRequests == 0 && st.ParkedRequests == 0
		})
		for _, c := range cancels {
			c()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := sep.Shutdown(ctx)
		cancel()
		if err != nil {
			t.Fatalf("seed %d: Shutdown: %v", seed, err)
		}
	}
	if hostile == 0 || kinds[0] == 0 || kinds[1] == 0 || kinds[2] == 0 || kinds[3] == 0 {
		t.Fatalf("not every end was tried: %v ends, %d hostile frames refused", kinds, hostile)
	}
}
