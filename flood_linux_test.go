package erpc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// TestConnectFloodUDP is the reviewer's attack over real UDP: 100,000
// connects at 20,000/s forged from 1,024 ports of 64 loopback addresses,
// which used to fill the server's session table in 3.3 s and refuse every
// new session. Clients dial and call all through it and must never be
// refused, and the server's sessions stay within the half-open bound (1024)
// plus the clients'.
func TestConnectFloodUDP(t *testing.T) {
	checkLeaks(t)
	sp := newSpoofer(t)
	srv := udpNet{}.Listen(t, serverWith(t, "Echo", echoHandler))
	const floodN, perMilli, bound = 100_000, 20, 1024

	var sent atomic.Int64
	stop := make(chan struct{})
	flooded := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		begin := time.Now()
		for sent.Load() < floodN {
			select {
			case <-stop:
				flooded <- nil
				return
			case <-tick.C:
			}
			// A ticker drops the ticks a loaded host misses: send what
			// is due by the clock.
			due := min(int64(time.Since(begin)/time.Millisecond+1)*perMilli, floodN)
			for sent.Load() < due {
				from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 1, byte(1 + rng.IntN(64))}), uint16(20000+rng.IntN(1024)))
				if err := sp.send(from, srv.Addr(), connectPacket(rng.Uint32(), rng.Uint32()|1)); err != nil {
					flooded <- err
					return
				}
				sent.Add(1)
			}
		}
		flooded <- nil
	}()
	defer close(stop)

	maxSessions, maxHalf := 0, 0
	var worst time.Duration
	for i := 0; sent.Load() < floodN; i++ {
		time.Sleep(100 * time.Millisecond)
		st := srv.Stats()
		maxSessions, maxHalf = max(maxSessions, st.ServerSessions), max(maxHalf, st.HalfOpen)
		if st.HalfOpen > bound || st.ServerSessions > bound+i {
			t.Fatalf("after %d forged connects: %d sessions, %d half open: over the bound", sent.Load(), st.ServerSessions, st.HalfOpen)
		}
		if i%5 != 4 {
			continue
		}
		// Every half second, a new client dials and calls.
		start := time.Now()
		cli := udpNet{}.Listen(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := cli.Dial(ctx, srv.Addr().String())
		if err == nil {
			var resp []byte
			resp, err = s.Call(ctx, "Echo", []byte("hello"), nil)
			if err == nil && string(resp) != "hello" {
				err = fmt.Errorf("wrong response %q", resp)
			}
			s.Close()
		}
		cancel()
		cli.Close()
		took := time.Since(start)
		worst = max(worst, took)
		if err != nil {
			t.Fatalf("a client dialing after %d forged connects: %v", sent.Load(), err)
		}
	}
	if err := <-flooded; err != nil {
		t.Fatal(err)
	}
	st := srv.Stats()
	t.Logf("%d forged connects: %d retries sent, %d half-open sessions reaped; at most %d sessions, %d half open; the slowest client took %v",
		sent.Load(), st.RetriesSent, st.HalfOpenReaped, maxSessions, maxHalf, worst)
	if st.RetriesSent == 0 || maxHalf < bound/2 {
		t.Fatalf("the flood never pressed the server: %+v", st)
	}
}
