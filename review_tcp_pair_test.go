package erpc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewTCPMutualDial: promise 6's "two only when both dial at once"
// with sessions in flight: pairs of endpoints that serve and dial each
// other at the same instant, then call each other from several goroutines.
// Every call must succeed, and each handler run once per call.
func TestReviewTCPMutualDial(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for round := range 8 {
		var runs [2]sync.Map
		var eps [2]*erpc.Endpoint
		for i := range eps {
			srv := erpc.NewServer()
			if err := srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) {
				if _, dup := runs[i].LoadOrStore(string(req), true); dup {
					return nil, fmt.Errorf("ran twice: %s", req)
				}
				return req, nil
			}); err != nil {
				t.Fatal(err)
			}
			ep, err := srv.Listen("tcp://127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			eps[i] = ep
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var ss [2]*erpc.Session
		var derr [2]error
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() { ss[i], derr[i] = eps[i].Dial(ctx, eps[1-i].Target()) })
		}
		wg.Wait()
		for i := range 2 {
			if derr[i] != nil {
				t.Fatalf("round %d: dial %d: %v", round, i, derr[i])
			}
		}
		var failed atomic.Int32
		var first atomic.Value
		for i := range 2 {
			for g := range 4 {
				seed := rng.Uint64()
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, 0))
					for k := range 50 {
						req := []byte(fmt.Sprintf("%d/%d/%d/%d", round, i, g, k))
						resp, err := ss[i].Call(ctx, "Echo", req, nil)
						if err != nil || string(resp) != string(req) {
							failed.Add(1)
							first.CompareAndSwap(nil, fmt.Sprintf("%s: %v", req, err))
						}
						if r.IntN(10) == 0 {
							time.Sleep(time.Millisecond)
						}
					}
				})
			}
		}
		wg.Wait()
		cancel()
		for i := range 2 {
			ss[i].Close()
			eps[i].Close()
		}
		if failed.Load() != 0 {
			t.Fatalf("round %d: %d of 400 calls failed (first %v)", round, failed.Load(), first.Load())
		}
	}
}
