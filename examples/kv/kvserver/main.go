// Command kvserver serves the kv example store over erpc-go, or, with
// -demo, starts a server and a client in one process over UDP loopback,
// loads keys, reads them back and prints the round trips.
//
//	go run ./examples/kv/kvserver -demo
//	go run ./examples/kv/kvserver -addr 127.0.0.1:31860 -keys 100000
//	go run ./examples/kv/kvserver -addr 127.0.0.1:31860 -workers 2 -dispatch shared
//
// By default GET and SET run inline on the endpoint's event loop. With
// -workers N they run on N background workers; -dispatch picks how
// requests reach them (shared: one queue that every idle worker takes
// from; hash: a queue per worker, a session's requests always to the same
// one), and -slo bounds the queue so that a request it admits can still be
// answered within that target (the rest are refused at once with
// ResourceExhausted).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/examples/kv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:31860", "address to serve at")
	keys := flag.Int("keys", 1<<16, "capacity, and keys loaded by -demo")
	workers := flag.Int("workers", 0, "background workers (0: handlers inline on the event loop)")
	dispatch := flag.String("dispatch", "shared", "with -workers: shared or hash")
	slo := flag.Duration("slo", 0, "with -workers: latency target that bounds the queue (0: no bound by time)")
	demo := flag.Bool("demo", false, "serve on an ephemeral port and run a client against it, then exit")
	plaintext := flag.Bool("insecure", false, "serve in plaintext on an address other hosts can reach (erpc.Insecure): only on a network you trust")
	flag.Parse()

	st := kv.NewStore(kv.Config{Capacity: *keys})
	srv := erpc.NewServer()
	var hopts []erpc.HandlerOption
	var opts []erpc.Option
	if *plaintext {
		opts = append(opts, erpc.Insecure())
	}
	if *workers > 0 {
		hopts = append(hopts, erpc.Background())
		opts = append(opts, erpc.WithWorkers(*workers))
		switch *dispatch {
		case "shared":
			opts = append(opts, erpc.WithDispatch(erpc.DispatchShared))
		case "hash":
			opts = append(opts, erpc.WithDispatch(erpc.DispatchHash))
		default:
			log.Fatalf("-dispatch: shared or hash, not %q", *dispatch)
		}
		if *slo > 0 {
			opts = append(opts, erpc.WithSLO(*slo, 0))
		}
	}
	if err := kv.Register(srv, st, hopts...); err != nil {
		log.Fatal(err)
	}
	if *demo {
		*addr = "127.0.0.1:0"
	}
	ep, err := srv.Listen(*addr, opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer ep.Close()
	if !*demo {
		log.Printf("kv: serving %d keys' worth at %s", *keys, ep.Target())
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		<-sig
		return
	}
	if err := runDemo(ep.Target(), *keys); err != nil {
		log.Fatal(err)
	}
}

// runDemo loads n keys with values of 64 to 512 bytes, reads each back and
// checks it, and prints the round trips of both.
func runDemo(target string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := erpc.Dial(ctx, target)
	if err != nil {
		return err
	}
	defer s.Close()
	n = min(n, 20000)
	key := make([]byte, kv.KeySize)
	val := make([]byte, kv.MaxValue)
	valueOf := func(i int) []byte {
		v := val[:kv.MinValue+i%(kv.MaxValue-kv.MinValue+1)]
		for j := range v {
			v[j] = byte(i*31 + j)
		}
		return v
	}
	keyOf := func(i int) []byte {
		copy(key, fmt.Sprintf("k%015d", i))
		return key
	}
	var req, buf []byte
	set := make([]time.Duration, 0, n)
	get := make([]time.Duration, 0, n)
	for i := range n {
		req = kv.SetRequest(req, keyOf(i), valueOf(i))
		t0 := time.Now()
		if _, err := s.Call(ctx, kv.MethodSet, req, nil); err != nil {
			return fmt.Errorf("set %d: %w", i, err)
		}
		set = append(set, time.Since(t0))
	}
	for i := range n {
		t0 := time.Now()
		buf, err = kv.Get(ctx, s, keyOf(i), buf)
		get = append(get, time.Since(t0))
		if err != nil {
			return fmt.Errorf("get %d: %w", i, err)
		}
		if want := valueOf(i); string(buf) != string(want) {
			return fmt.Errorf("get %d: wrong value", i)
		}
	}
	_, err = kv.Get(ctx, s, keyOf(n+1), buf)
	if erpc.CodeOf(err) != erpc.NotFound {
		return fmt.Errorf("missing key: %v", err)
	}
	fmt.Printf("kv over UDP loopback (%s): %d keys, values 64-512 B, one call in flight\n", target, n)
	for _, r := range []struct {
		op  string
		lat []time.Duration
	}{{"SET", set}, {"GET", get}} {
		slices.Sort(r.lat)
		fmt.Printf("%s  p50 %v  p99 %v  max %v\n", r.op, r.lat[len(r.lat)/2].Round(100*time.Nanosecond),
			r.lat[len(r.lat)*99/100].Round(100*time.Nanosecond), r.lat[len(r.lat)-1].Round(100*time.Nanosecond))
	}
	fmt.Println("missing key: NotFound, as it should")
	return nil
}
