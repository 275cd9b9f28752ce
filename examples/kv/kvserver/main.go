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
//
// With -cert and -key it serves TLS 1.3 (erpc.WithTLS); its clients
// verify it with the CA that signed the certificate (erpc.WithTLS with a
// tls.Config whose RootCAs hold it). With -demo, -cacert gives the demo's
// client that CA:
//
//	go run ./examples/kv/kvserver -addr 0.0.0.0:31860 -cert server.pem -key server.key
//	go run ./examples/kv/kvserver -demo -cert server.pem -key server.key -cacert ca.pem
//
// Without them it serves plaintext: on loopback as it is, on an address
// other hosts can reach only with -insecure (erpc.Insecure), for a
// network you trust.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/examples/kv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, log.Default())
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// run serves with the flags in args until ctx is done, saying where on
// logger; with -demo it runs the demo's client instead, printing to out.
func run(ctx context.Context, args []string, out io.Writer, logger *log.Logger) error {
	fs := flag.NewFlagSet("kvserver", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:31860", "address to serve at")
	keys := fs.Int("keys", 1<<16, "capacity, and keys loaded by -demo")
	workers := fs.Int("workers", 0, "background workers (0: handlers inline on the event loop)")
	dispatch := fs.String("dispatch", "shared", "with -workers: shared or hash")
	slo := fs.Duration("slo", 0, "with -workers: latency target that bounds the queue (0: no bound by time)")
	demo := fs.Bool("demo", false, "serve on an ephemeral port and run a client against it, then exit")
	plaintext := fs.Bool("insecure", false, "serve in plaintext on an address other hosts can reach (erpc.Insecure): only on a network you trust")
	var sec tlsFlags // tls.go
	fs.StringVar(&sec.cert, "cert", "", "TLS: a PEM `file` of the server's certificate chain (with -key)")
	fs.StringVar(&sec.key, "key", "", "TLS: a PEM `file` of the server's private key (with -cert)")
	fs.StringVar(&sec.cacert, "cacert", "", "with -demo and -cert: a PEM `file` of the CA certificates the demo's client verifies the server with")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("kvserver takes flags only, not %q", fs.Args())
	}
	opts, err := sec.serverOptions(*plaintext)
	if err != nil {
		return err
	}
	demoOpts, err := sec.demoClientOptions(*demo)
	if err != nil {
		return err
	}

	st := kv.NewStore(kv.Config{Capacity: *keys})
	srv := erpc.NewServer()
	var hopts []erpc.HandlerOption
	if *workers > 0 {
		hopts = append(hopts, erpc.Background())
		opts = append(opts, erpc.WithWorkers(*workers))
		switch *dispatch {
		case "shared":
			opts = append(opts, erpc.WithDispatch(erpc.DispatchShared))
		case "hash":
			opts = append(opts, erpc.WithDispatch(erpc.DispatchHash))
		default:
			return fmt.Errorf("-dispatch: shared or hash, not %q", *dispatch)
		}
		if *slo > 0 {
			opts = append(opts, erpc.WithSLO(*slo, 0))
		}
	}
	if err := kv.Register(srv, st, hopts...); err != nil {
		return err
	}
	if *demo {
		*addr = "127.0.0.1:0"
	}
	ep, err := srv.Listen(*addr, opts...)
	if err != nil {
		return err
	}
	defer ep.Close()
	if !*demo {
		logger.Printf("kv: serving %d keys' worth at %s, %s", *keys, ep.Target(), sec.security())
		<-ctx.Done()
		return nil
	}
	return runDemo(ctx, ep.Target(), *keys, out, demoOpts...)
}

// runDemo loads n keys with values of 64 to 512 bytes, reads each back and
// checks it, and prints the round trips of both to out; it dials target
// with opts.
func runDemo(ctx context.Context, target string, n int, out io.Writer, opts ...erpc.Option) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s, err := erpc.Dial(ctx, target, opts...)
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
	fmt.Fprintf(out, "kv over UDP loopback (%s, %s): %d keys, values 64-512 B, one call in flight\n", target, sessionSecurity(s), n)
	for _, r := range []struct {
		op  string
		lat []time.Duration
	}{{"SET", set}, {"GET", get}} {
		slices.Sort(r.lat)
		fmt.Fprintf(out, "%s  p50 %v  p99 %v  max %v\n", r.op, r.lat[len(r.lat)/2].Round(100*time.Nanosecond),
			r.lat[len(r.lat)*99/100].Round(100*time.Nanosecond), r.lat[len(r.lat)-1].Round(100*time.Nanosecond))
	}
	fmt.Fprintln(out, "missing key: NotFound, as it should")
	return nil
}

// sessionSecurity says whether s is a TLS session, as its handshake
// proved (PeerAuth), not as the flags asked.
func sessionSecurity(s *erpc.Session) string {
	if s.PeerAuth().TLS != nil {
		return "TLS"
	}
	return "plaintext"
}
