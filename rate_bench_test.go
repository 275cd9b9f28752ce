package erpc_test

import (
	"context"
	"sync"
	"testing"

	"github.com/erpc-go/erpc"
)

// BenchmarkRate: 32-byte calls over UDP loopback, with `inflight` calls
// kept going on one session by their continuations (eRPC's closed loop,
// as erpc-bench rate does), client and server in this process: calls per
// second and the retransmissions they needed (there should be none on
// loopback).
func BenchmarkRate(b *testing.B) {
	for _, inflight := range []int{1, 64} {
		b.Run(map[int]string{1: "1", 64: "64"}[inflight], func(b *testing.B) { benchRate(b, inflight) })
	}
}

func benchRate(b *testing.B, inflight int) {
	srv, err := rawEcho(b).Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cli, err := erpc.Listen("127.0.0.1:0", erpc.WithWindow(inflight))
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	s, err := cli.Dial(context.Background(), srv.Target())
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	left := b.N
	var wg sync.WaitGroup
	req := make([]byte, 32)
	b.ReportAllocs()
	for range inflight {
		resp := make([]byte, 0, 64)
		var next func([]byte, error)
		next = func(_ []byte, err error) {
			if err != nil {
				b.Error(err)
			}
			mu.Lock()
			more := left > 0
			left--
			mu.Unlock()
			if !more || err != nil {
				wg.Done()
				return
			}
			s.Go("Echo", req, resp[:0], next)
		}
		wg.Add(1)
		next(nil, nil)
	}
	wg.Wait()
	b.ReportMetric(float64(cli.Stats().Retransmits), "retx")
}
