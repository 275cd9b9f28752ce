package raftbench

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"
)

// BenchmarkPut reports the latency of one replicated PUT at a time, per
// raft transport. The p50/p99 metrics are over the b.N PUTs.
//
//	go test ./raftbench -run '^$' -bench Put -benchtime 5000x
func BenchmarkPut(b *testing.B) {
	for _, tr := range []string{"erpc", "raft-tcp"} {
		b.Run(tr, func(b *testing.B) {
			c, err := Start(Config{Transport: tr})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			for range 200 { // warm up
				c.Put(ctx)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				if err := c.Put(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			report(b, lat)
		})
	}
}

func report(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	s := append([]time.Duration(nil), lat...)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(s[min(len(s)-1, len(s)*99/100)].Microseconds()), "p99-µs")
}

// TestRunShort checks that Run works end to end for both raft transports,
// with the erpc endpoints on UDP and (on Linux) on shm.
func TestRunShort(t *testing.T) {
	networks := []string{"udp"}
	if runtime.GOOS == "linux" {
		networks = append(networks, "shm")
	}
	for _, network := range networks {
		for _, tr := range []string{"erpc", "raft-tcp"} {
			res, err := Run(context.Background(), Config{Transport: tr, Network: network, Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond})
			if err != nil {
				t.Fatalf("%s on %s: %v", tr, network, err)
			}
			if res.Count == 0 || res.P50 <= 0 || res.P99 < res.P50 {
				t.Fatalf("%s on %s: %+v", tr, network, res)
			}
			t.Log(network, res)
		}
	}
}
