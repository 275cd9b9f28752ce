package balancer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// builtins are the balancers every hot-path test runs against.
var builtins = []struct {
	name string
	make func() Balancer
}{
	{"P2C", P2C},
	{"RoundRobin", RoundRobin},
	{"Hash", Hash},
}

// TestPickDoneAllocs: Pick and Done allocate nothing, with and without a
// key, with equal and unequal weights.
func TestPickDoneAllocs(t *testing.T) {
	for _, bb := range builtins {
		for _, weights := range [][]uint32{{1}, {1, 2, 3}} {
			b := bb.make()
			b.Update(newReplicas(8, weights...))
			for _, info := range []PickInfo{{Method: "/kv/Get"}, {Method: "/kv/Get", Key: "user:42", HasKey: true}} {
				allocs := testing.AllocsPerRun(1000, func() {
					r := b.Pick(info)
					r.State.InFlight.Add(1)
					r.State.InFlight.Add(-1)
					b.Done(r, DoneInfo{Latency: time.Millisecond})
				})
				if allocs != 0 {
					t.Errorf("%s weights %v key %v: %.1f allocs per Pick+Done", bb.name, weights, info.HasKey, allocs)
				}
			}
		}
	}
}

// TestPickDoneUpdateConcurrent: many goroutines pick and finish calls
// while another replaces the replicas again and again; every pick is a known
// replica and the in-flight counts end at zero (run it under -race).
func TestPickDoneUpdateConcurrent(t *testing.T) {
	for _, bb := range builtins {
		t.Run(bb.name, func(t *testing.T) {
			b := bb.make()
			all := newReplicas(16, 1, 2, 3)
			known := map[*Replica]bool{}
			for _, r := range all {
				known[r] = true
			}
			b.Update(all[:4])
			keys := make([]string, 32)
			for i := range keys {
				keys[i] = fmt.Sprint("user:", i)
			}
			var wg sync.WaitGroup
			var picksDone atomic.Bool
			var updates atomic.Int64
			errs := make(chan error, 8)
			var picks atomic.Int64
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// At least 2000 picks, and on until 20 Updates ran.
					for i := 0; i < 2000 || updates.Load() < 20; i++ {
						r := b.Pick(PickInfo{Key: keys[i%32], HasKey: i%2 == 0})
						if r == nil || !known[r] {
							errs <- fmt.Errorf("picked %v", r)
							return
						}
						picks.Add(1)
						r.State.InFlight.Add(1)
						r.State.InFlight.Add(-1)
						b.Done(r, DoneInfo{Latency: time.Duration(i%100) * time.Microsecond})
					}
				}()
			}
			go func() { wg.Wait(); picksDone.Store(true) }()
			for i := 0; !picksDone.Load(); i++ {
				b.Update(all[i%8 : i%8+1+i%8])
				updates.Add(1)
			}
			t.Logf("%d picks, %d updates", picks.Load(), updates.Load())
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for _, r := range all {
				if n := r.State.InFlight.Load(); n != 0 {
					t.Fatalf("%s: %d in flight after all calls ended", r.Addr, n)
				}
			}
		})
	}
}

func BenchmarkPickDone(b *testing.B) {
	for _, bb := range builtins {
		for _, n := range []int{4, 64} {
			b.Run(fmt.Sprintf("%s/%d", bb.name, n), func(b *testing.B) {
				bal := bb.make()
				bal.Update(newReplicas(n))
				info := PickInfo{Method: "/kv/Get", Key: "user:42", HasKey: true}
				b.ReportAllocs()
				for b.Loop() {
					r := bal.Pick(info)
					r.State.InFlight.Add(1)
					r.State.InFlight.Add(-1)
					bal.Done(r, DoneInfo{Latency: time.Millisecond})
				}
			})
		}
	}
}
