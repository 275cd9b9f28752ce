package proto

import (
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/erpc-go/erpc/internal/simnet"
)

// TestPoolSweepReleasesOnlyIdle drives the buffer pool with random gets
// and puts of random sizes, and checks each sweep against a model: it
// releases exactly the buffers that were free for the whole period (in the
// pool when it began and never lent since), and never one that a get
// handed out.
func TestPoolSweepReleasesOnlyIdle(t *testing.T) {
	for seed := range uint64(200) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		p := bufPool{limit: 64 << 20}
		id := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b[:1]))) }
		var out [][]byte
		lent := map[uintptr]bool{}    // lent since the last sweep
		atStart := map[uintptr]bool{} // free when the period began
		for period := range 20 {
			for range rnd.IntN(400) {
				if len(out) > 0 && rnd.IntN(2) == 0 {
					i := rnd.IntN(len(out))
					p.put(out[i])
					out[i] = out[len(out)-1]
					out = out[:len(out)-1]
					continue
				}
				b := p.get(1 + rnd.IntN(1<<(6+rnd.IntN(8))))
				lent[id(b)] = true
				out = append(out, b)
			}
			free := map[uintptr]int{}
			idle, held := 0, 0
			for c, list := range p.classes {
				for _, b := range list {
					free[id(b)] = c
					held += cap(b)
					if atStart[id(b)] && !lent[id(b)] {
						idle += cap(b)
					}
				}
			}
			if held != p.held {
				t.Fatalf("seed %d: pool counts %d bytes, holds %d", seed, p.held, held)
			}
			released := p.sweepPool()
			if released != idle {
				t.Fatalf("seed %d period %d: released %d bytes; %d were idle the whole period", seed, period, released, idle)
			}
			for _, list := range p.classes {
				for _, b := range list {
					delete(free, id(b))
				}
			}
			for k := range free {
				if lent[k] {
					t.Fatalf("seed %d period %d: released a buffer lent during the period", seed, period)
				}
			}
			clear(lent)
			clear(atStart)
			for _, list := range p.classes {
				for _, b := range list {
					atStart[id(b)] = true
				}
			}
		}
	}
}

// TestPoolFollowsLoad: a steady load keeps its buffers (the pool does not
// churn while requests keep coming), and once the load ends the server's
// free buffers go back to the heap within two PoolIdle periods; with no
// buffers left the pool sets no deadline, so an idle endpoint sleeps.
func TestPoolFollowsLoad(t *testing.T) {
	w := newWorld(t, 1, simnet.LinkConfig{Delay: time.Millisecond})
	srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1), Window: 32})
	srv.onEvent = func(ev Event) {
		if ev.Type == EventRequest {
			if err := srv.e.Respond(w.now, ev.Req, 0, []byte("ok")); err != nil {
				t.Fatal(err)
			}
		}
	}
	cli := w.addHost("client", "10.0.1.1:1", Config{Random: seedRandom(2), Window: 32, Credits: 1024})
	sid := cli.e.Connect(w.now, srv.addr)
	req := make([]byte, 60<<10)
	loading, done := true, 0
	start := func() {
		if _, err := cli.e.StartCall(w.now, sid, 1, req, make([]byte, 0, 16), Never, nil); err != nil {
			t.Fatal(err)
		}
	}
	cli.onEvent = func(ev Event) {
		if ev.Type == EventResponse {
			if ev.Err != nil {
				t.Fatal(ev.Err)
			}
			done++
			if loading {
				start()
			}
		}
	}
	for range 4 {
		start()
	}
	w.runFor(Time(time.Second)) // warm up
	warm := srv.e.Stats()
	w.runFor(Time(5 * time.Second))
	loaded := srv.e.Stats()
	if loaded.PooledBytes == 0 || done < 1000 {
		t.Fatalf("under load: %d calls done, pooled %d bytes; the test's load did not run", done, loaded.PooledBytes)
	}
	churn := loaded.PoolReleasedBytes - warm.PoolReleasedBytes
	if churn > uint64(loaded.PooledBytes) {
		t.Fatalf("under steady load the pool released %d bytes in 5 s, more than the %d it holds: it churns", churn, loaded.PooledBytes)
	}
	loading = false
	w.runFor(Time(100 * time.Millisecond))
	if srv.e.poolSweepAt == Never {
		t.Fatal("the pool holds buffers but no sweep is armed")
	}
	w.runFor(Time(2*defaultPoolIdle + 100*time.Millisecond))
	after := srv.e.Stats()
	t.Logf("load: %d calls, pooled %d KiB; 4.1 s after it ended: pooled %d KiB, released %d KiB in all", done, loaded.PooledBytes>>10, after.PooledBytes>>10, after.PoolReleasedBytes>>10)
	if after.PooledBytes != 0 || after.PoolReleasedBytes <= loaded.PoolReleasedBytes {
		t.Fatalf("two periods after the load ended: %+v", after)
	}
	if srv.e.poolSweepAt != Never {
		t.Fatal("an empty pool keeps a sweep deadline: an idle endpoint would wake for nothing")
	}
}

// TestPoolIdleNegativeKeeps: PoolIdle < 0 keeps free buffers for good.
func TestPoolIdleNegativeKeeps(t *testing.T) {
	e := New(Config{Random: seedRandom(1), PoolIdle: -1})
	e.Recycle(e.Buffer(4096))
	for i := range 10 {
		e.Tick(Time(i) * Time(time.Second))
	}
	if st := e.Stats(); st.PooledBytes != 4096 || st.PoolReleasedBytes != 0 {
		t.Fatalf("%+v", st)
	}
}
