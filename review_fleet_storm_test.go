package erpc_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// down closes the server abruptly and leaves its port closed.
func (r *revUDPReplica) down() {
	r.mu.Lock()
	ep := r.ep
	r.ep = nil
	r.mu.Unlock()
	ep.Close()
}

// TestReviewStormAllRecover: 40 Clients (WithConnectRate(2) each, burst
// 1) under load over four loopback servers; all four go down at once and
// stay down 400 ms, long enough for the Clients' dials to them to fail
// and back off, then come back on their ports. Every Client must serve
// again soon after (it needs one replica, not four), and the servers
// must never see more connects in a second than 40 × (2 a second + a
// burst of 1).
func TestReviewStormAllRecover(t *testing.T) {
	start := time.Now()
	var buckets [64]atomic.Int64
	const n, clients, rate = 4, 40, 2
	var reps []*revUDPReplica
	var addrs []string
	for range n {
		r := revStartUDP(t, start, &buckets)
		reps = append(reps, r)
		addrs = append(addrs, r.addr)
	}
	var cs []*erpc.Client
	for range clients {
		c, err := erpc.NewClient("static:///"+strings.Join(addrs, ","), erpc.WithConnectRate(rate))
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for _, c := range cs {
		if !revWait(5*time.Second, func() bool { return revCountState(c, erpc.ReplicaReady) == n }) {
			t.Fatalf("not ready: %+v", c.Replicas())
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls atomic.Int64
	var restarted atomic.Pointer[time.Time]
	firstOK := make([]atomic.Int64, clients) // ns after the restart of each Client's first answer
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, err := c.Call(ctx, "Echo", []byte("x"), nil)
				cancel()
				calls.Add(1)
				if t0 := restarted.Load(); err == nil && t0 != nil && firstOK[i].Load() == 0 {
					firstOK[i].Store(int64(time.Since(*t0)) + 1)
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond) // every Client's bucket is full again
	s0 := int(time.Since(start) / time.Second)
	for _, r := range reps {
		r.down()
	}
	time.Sleep(400 * time.Millisecond)
	ups0 := int64(0)
	for _, r := range reps {
		ups0 += r.ups.Load()
	}
	for _, r := range reps {
		r.listen()
	}
	t0 := time.Now()
	restarted.Store(&t0)
	recovered := revWait(3*time.Second, func() bool {
		for i := range firstOK {
			if firstOK[i].Load() == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	s1 := int(time.Since(start) / time.Second)
	var worstRecovery time.Duration
	missing := 0
	for i := range firstOK {
		if d := time.Duration(firstOK[i].Load()); d == 0 {
			missing++
		} else {
			worstRecovery = max(worstRecovery, d)
		}
	}
	var per []int64
	worst := int64(0)
	for s := s0; s <= s1 && s < len(buckets); s++ {
		per = append(per, buckets[s].Load())
		worst = max(worst, buckets[s].Load())
	}
	reconnects := int64(0)
	for _, r := range reps {
		reconnects += r.ups.Load()
	}
	reconnects -= ups0
	t.Logf("%d calls; %d sessions reopened; %d of %d Clients served within 3 s of the restart (the slowest after %v); connects per second at the servers: %v",
		calls.Load(), reconnects, clients-missing, clients, worstRecovery.Round(time.Millisecond), per)
	if calls.Load() == 0 || reconnects == 0 {
		t.Fatal("no load or no reconnect: the fault was not injected")
	}
	if !recovered {
		t.Fatalf("%d of %d Clients had no call answered within 3 s of their servers' return", missing, clients)
	}
	if limit := int64(clients * (rate + 1)); worst > limit {
		t.Fatalf("%d connects in one second at the servers; %d Clients at %d/s (burst 1) allow %d: per second %v", worst, clients, rate, limit, per)
	}
}
