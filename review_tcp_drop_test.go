package erpc_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewTCPFullOutboxAtMostOnce: a TCP peer whose loop stalls (a
// blocking continuation, a SIGSTOP, a GC pause) lets the other side's
// outbox fill past 16 MiB, where frames are dropped and the lean path's
// 100 ms safety net must resend. Both directions: requests dropped at the
// client (the server's loop stalls) and responses dropped at the server
// (the client's loop stalls). Each call carries a unique id; every call
// must complete with its own response, and no handler may run twice for
// one id (at-most-once).
func TestReviewTCPFullOutboxAtMostOnce(t *testing.T) {
	for _, stall := range []string{"server", "client"} {
		t.Run(stall, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 11))
			var mu sync.Mutex
			runs := map[uint64]int{}
			srv := erpc.NewServer()
			respSize := 1 << 20
			if err := srv.Handle("Big", func(_ context.Context, req []byte) ([]byte, error) {
				id := binary.BigEndian.Uint64(req)
				mu.Lock()
				runs[id]++
				mu.Unlock()
				if stall == "client" {
					out := make([]byte, respSize)
					copy(out, req[:8])
					return out, nil
				}
				return req[:8], nil
			}); err != nil {
				t.Fatal(err)
			}
			sep, err := srv.Listen("tcp://127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer sep.Close()
			cep, err := erpc.Listen("tcp://")
			if err != nil {
				t.Fatal(err)
			}
			defer cep.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const sessions, perSession = 24, 3
			var ss []*erpc.Session
			for range sessions {
				s, err := cep.Dial(ctx, sep.Target())
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				ss = append(ss, s)
			}
			// One side's loop will stall while 72 MiB go its way.
			block := make(chan struct{})
			stalled := sep
			if stall == "client" {
				stalled = cep
			}
			var wg sync.WaitGroup
			var failed atomic.Int32
			var firstErr atomic.Value
			reqSize := 8
			if stall == "server" {
				reqSize = respSize
			}
			var id uint64
			for _, s := range ss {
				for range perSession {
					id++
					req := make([]byte, reqSize)
					binary.BigEndian.PutUint64(req, id)
					for i := 8; i < len(req); i += 4096 {
						req[i] = byte(rng.Uint32())
					}
					myID := id
					wg.Go(func() {
						resp, err := s.Call(ctx, "Big", req, nil)
						if err != nil || len(resp) < 8 || binary.BigEndian.Uint64(resp) != myID {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, fmt.Sprintf("call %d: %v (%d bytes)", myID, err, len(resp)))
						}
					})
				}
			}
			// The requests are on their way (or, for a server stall, about
			// to queue); now stall the loop for 800 ms, under the 2 s
			// failure timeout.
			time.Sleep(20 * time.Millisecond)
			if err := stalled.Post(func() { <-block }); err != nil {
				t.Fatal(err)
			}
			time.Sleep(800 * time.Millisecond)
			close(block)
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			twice := 0
			for _, n := range runs {
				if n > 1 {
					twice++
				}
			}
			t.Logf("client %+v", cep.Stats())
			if failed.Load() != 0 || twice != 0 {
				t.Fatalf("%d of %d calls failed (first: %v); %d handlers ran more than once", failed.Load(), id, firstErr.Load(), twice)
			}
		})
	}
}
