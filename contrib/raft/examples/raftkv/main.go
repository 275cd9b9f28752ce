// Command raftkv is a replicated in-memory key-value store on hashicorp/raft
// over erpc: three replicas in this process (each its own erpc endpoint on
// UDP loopback, raft with in-memory stores), and a client that PUTs and
// GETs 16-byte keys and 64-byte values through the leader. The client is
// pointed at a follower first, to show the redirect to the leader; every
// command carries (client id, sequence number), so the retries a client
// makes after a timeout or a leader change are applied at most once.
//
//	go run ./contrib/raft/examples/raftkv             # from the repository root
//	go run ./contrib/raft/examples/raftkv -n 5000 -network mem
//
// It prints the latency of replicated PUTs (p50/p99) and exits 0.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/contrib/raft/kvstore"
	"github.com/hashicorp/raft"
)

func main() {
	n := flag.Int("n", 2000, "PUTs to time")
	network := flag.String("network", "udp", "udp (loopback) or mem (in-process)")
	spin := flag.Duration("spin", time.Millisecond, "erpc event-loop spin after work (erpc.WithSpin); a spin longer than raft's commit path keeps every hop from waking a parked thread")
	flag.Parse()
	if err := run(*n, *network, *spin); err != nil {
		log.Fatal(err)
	}
}

func run(n int, network string, spin time.Duration) error {
	opts := []erpc.Option{erpc.WithSpin(spin)}
	c, err := kvstore.StartCluster(kvstore.ClusterConfig{
		Network:         network,
		EndpointOptions: opts,
		Raft: func(rc *raft.Config) { // raft's defaults, not the test timeouts
			d := raft.DefaultConfig()
			rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = d.HeartbeatTimeout, d.ElectionTimeout, d.LeaderLeaseTimeout
		},
	})
	if err != nil {
		return err
	}
	defer c.Close()
	l, err := c.Leader(10 * time.Second)
	if err != nil {
		return err
	}
	addrs := c.APIAddrs()
	fmt.Printf("replicas: %v, leader r%d (%s)\n", addrs, l, addrs[l])

	// Start the client on a follower: its first command is redirected.
	follower := (l + 1) % len(addrs)
	order := append([]string{addrs[follower]}, slices.Delete(slices.Clone(addrs), follower, follower+1)...)
	clientNet := "127.0.0.1:0"
	if network == "mem" {
		clientNet = "mem://"
	}
	cl, err := kvstore.NewClient(42, clientNet, order, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := func(i int) []byte { return fmt.Appendf(make([]byte, 0, 16), "key-%012d", i%1000) }
	val := func(i int) []byte {
		v := make([]byte, 64)
		copy(v, fmt.Sprintf("value-%d", i))
		return v
	}
	if err := cl.Put(ctx, key(0), val(0)); err != nil {
		return err
	}
	fmt.Printf("first PUT sent to follower r%d, answered by the leader after a redirect\n", follower)

	for i := range 200 { // warm-up
		if err := cl.Put(ctx, key(i), val(i)); err != nil {
			return err
		}
	}
	lat := make([]time.Duration, 0, n)
	for i := range n {
		t0 := time.Now()
		if err := cl.Put(ctx, key(i), val(i)); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	for _, i := range []int{max(0, n-500), max(0, n-2), n - 1} { // keys last written by these PUTs
		v, ok, err := cl.Get(ctx, key(i))
		if err != nil {
			return err
		}
		if !ok || !bytes.Equal(v, val(i)) {
			return fmt.Errorf("GET %s = %q, %v; want %q", key(i), v, ok, val(i))
		}
		fmt.Printf("GET %s -> %q\n", key(i), bytes.TrimRight(v, "\x00"))
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	fmt.Printf("%d replicated PUTs (16 B key, 64 B value, 3 replicas over erpc/%s): p50 %v  p99 %v  max %v\n",
		n, network, q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))

	// Wait until every replica has applied everything, then compare.
	deadline := time.Now().Add(5 * time.Second)
	for {
		same := true
		for i := 1; i < c.N(); i++ {
			if !c.Replica(0).FSM.Equal(c.Replica(i).FSM) {
				same = false
			}
		}
		if same {
			fmt.Printf("all %d replicas hold the same %d keys\n", c.N(), c.Replica(0).FSM.Len())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replicas differ")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
