//go:build linux

package network

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
)

// netConfig holds the flags of the testbed scenarios, incast, multipath
// and path (loss -testbed uses the loss scenario's).
type netConfig struct {
	// incast
	senders []int
	size    int           // bytes each sender sends per incast
	chunk   int           // call size (0: one call of size)
	reps    int           // measured incasts per system and senders
	warm    int           // discarded incasts first
	rate    uint64        // bottleneck, bits/s
	burst   int           // bottleneck burst, bytes
	limit   int           // bottleneck queue, bytes
	htb     bool          // HTB instead of TBF
	timeout time.Duration // per call
	gap     time.Duration // idle time between incasts

	// multipath
	fast, slow uint64 // path rates, bits/s
	paths      []int  // K for erpc-spray and erpc
	small      int    // size of the small calls beside the bulk
	conc       int    // bulk calls in flight

	// path
	rates    []uint64 // the path's rates, bits/s
	sessions int      // sessions of the shared rows

	window int // erpc: requests in flight per session (0: default)
	boost  bool
}

// parseBitRate reads "500M", "1G", "250e6" or "100mbit" as bits per second.
func parseBitRate(s string) (uint64, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	u = strings.TrimSuffix(strings.TrimSuffix(u, "BIT"), "BPS")
	mult := 1.0
	switch {
	case strings.HasSuffix(u, "K"):
		mult, u = 1e3, u[:len(u)-1]
	case strings.HasSuffix(u, "M"):
		mult, u = 1e6, u[:len(u)-1]
	case strings.HasSuffix(u, "G"):
		mult, u = 1e9, u[:len(u)-1]
	}
	v, err := strconv.ParseFloat(u, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("bad rate %q", s)
	}
	return uint64(v * mult), nil
}

// ParseFlags parses "incast [flags]", "multipath [flags]" or "path
// [flags]"; name is the scenario.
func ParseFlags(name string, args []string, stderr io.Writer) (*scenario.Config, error) {
	c := &scenario.Config{Settings: report.Settings{Scenario: name, Transport: "udp"}}
	nc := &netConfig{}
	c.Ext = nc
	fs := flag.NewFlagSet("erpc-bench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var vsDefault string
	switch name {
	case "incast":
		vsDefault = "erpc-nocc,grpc"
	case "multipath":
		vsDefault = "erpc-1path,erpc-spray,grpc"
	case "path":
		vsDefault = "grpc"
	}
	vs := fs.String("vs", vsDefault, "systems to run beside erpc, comma-separated, or none")
	senders := fs.String("senders", "16,50", "incast: numbers of senders, comma-separated")
	size := fs.String("size", "", "incast: bytes each sender sends per incast (default 256K); multipath, path: bulk call size (default 1M)")
	chunk := fs.String("chunk", "0", "incast: call size; a sender sends -size as -size/-chunk calls at once (0: one call)")
	fs.IntVar(&nc.reps, "reps", 5, "incast: measured incasts per system and number of senders")
	fs.IntVar(&nc.warm, "warm", 1, "incast: discarded incasts before the measured ones")
	rate := fs.String("rate", "500M", "incast: bottleneck rate in bits/s (suffix K, M, G)")
	burst := fs.String("burst", "32K", "incast: bottleneck burst in bytes")
	limit := fs.String("limit", "64K", "incast: bottleneck queue in bytes; multipath: each path's queue; path: the path's queue")
	rates := fs.String("rates", "10,50,250,1000", "path: the path's rates in Mbit/s, comma-separated")
	fs.IntVar(&nc.sessions, "sessions", 4, "path: sessions sharing the path in the second row of each rate (1: none)")
	fs.BoolVar(&nc.htb, "htb", false, "incast: HTB with a bfifo leaf instead of TBF")
	fs.DurationVar(&nc.timeout, "timeout", 10*time.Second, "incast: per call; a call that takes longer counts as failed")
	fs.DurationVar(&nc.gap, "gap", 50*time.Millisecond, "incast: idle time between incasts, after the queue has drained")
	fast := fs.String("fast", "250M", "multipath: rate of the fast path, bits/s")
	slow := fs.String("slow", "50M", "multipath: rate of the slow path, bits/s")
	paths := fs.String("paths", "2", "multipath: paths (source ports) of erpc-spray and erpc, comma-separated")
	fs.IntVar(&nc.small, "small", 32, "multipath: size of the small calls made beside the bulk traffic")
	conc := fs.Int("c", 0, "multipath: bulk calls in flight (default 4); path: calls in flight per session (default 2)")
	fs.DurationVar(&c.Dur, "d", 2*time.Second, "multipath, path: measured duration per point")
	fs.DurationVar(&c.Warmup, "warmup", 500*time.Millisecond, "multipath, path: warm-up per point, discarded")
	fs.IntVar(&nc.window, "window", 0, "erpc: concurrent requests per session (0: library default)")
	fs.BoolVar(&nc.boost, "boost", true, "raise the run's scheduling priority (nice -10, testnet.Boost) so other work on the machine stalls the senders less")
	fs.BoolVar(&c.JSON, "json", false, "one JSON object per line instead of a table")
	if name == "incast" {
		fs.StringVar(&c.Plot, "plot", "", "write an SVG plot (per-sender throughput over time in the last incast of each row) to this file")
	}
	fs.BoolVar(&c.Pin, "pin", true, "pin the server to CPU 0 and the client (all senders) to CPU 1 (when there are two or more)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if nc.senders, err = scenario.ParseInts(*senders); err != nil {
		return nil, fmt.Errorf("-senders: %w", err)
	}
	for _, n := range nc.senders {
		if n < 1 || n > 200 {
			return nil, fmt.Errorf("-senders: %d: want 1 to 200", n)
		}
	}
	if *size == "" {
		*size = map[string]string{"incast": "256K", "multipath": "1M", "path": "1M"}[name]
	}
	nc.conc = *conc
	if nc.conc == 0 {
		nc.conc = map[bool]int{true: 2, false: 4}[name == "path"]
	}
	var mbits []int
	mbits, err = scenario.ParseInts(*rates)
	if err != nil {
		return nil, fmt.Errorf("-rates: %w", err)
	}
	for _, m := range mbits {
		if m < 1 || m > 100000 {
			return nil, fmt.Errorf("-rates: %d Mbit/s: want 1 to 100000", m)
		}
		nc.rates = append(nc.rates, uint64(m)*1e6)
	}
	if nc.sessions < 1 || nc.sessions > 64 {
		return nil, fmt.Errorf("-sessions: %d: want 1 to 64", nc.sessions)
	}
	if nc.size, err = scenario.ParseSize(*size); err != nil || nc.size <= 0 {
		return nil, fmt.Errorf("-size: bad size %q", *size)
	}
	if nc.chunk, err = scenario.ParseSize(*chunk); err != nil {
		return nil, fmt.Errorf("-chunk: %w", err)
	}
	if nc.chunk <= 0 || nc.chunk > nc.size {
		nc.chunk = nc.size
	}
	if nc.size%nc.chunk != 0 {
		return nil, fmt.Errorf("-chunk %d does not divide -size %d", nc.chunk, nc.size)
	}
	if nc.rate, err = parseBitRate(*rate); err != nil {
		return nil, fmt.Errorf("-rate: %w", err)
	}
	if nc.fast, err = parseBitRate(*fast); err != nil {
		return nil, fmt.Errorf("-fast: %w", err)
	}
	if nc.slow, err = parseBitRate(*slow); err != nil {
		return nil, fmt.Errorf("-slow: %w", err)
	}
	if nc.burst, err = scenario.ParseSize(*burst); err != nil {
		return nil, fmt.Errorf("-burst: %w", err)
	}
	if nc.limit, err = scenario.ParseSize(*limit); err != nil {
		return nil, fmt.Errorf("-limit: %w", err)
	}
	if nc.paths, err = scenario.ParseInts(*paths); err != nil {
		return nil, fmt.Errorf("-paths: %w", err)
	}
	for _, k := range nc.paths {
		if k < 2 || k > 64 {
			return nil, fmt.Errorf("-paths: %d: want 2 to 64", k)
		}
	}
	if nc.reps < 1 || nc.warm < 0 || nc.conc < 1 || nc.small < 1 || c.Dur <= 0 || c.Warmup < 0 {
		return nil, fmt.Errorf("-reps, -c and -small must be positive, -warm not negative, -d positive")
	}
	known := map[string][]string{
		"incast":    {"erpc", "erpc-nocc", "grpc"},
		"multipath": {"erpc-1path", "erpc-spray", "erpc", "grpc"},
		"path":      {"erpc", "erpc-nocc", "grpc"},
	}[name]
	c.Systems = []string{"erpc"}
	if name == "multipath" {
		c.Systems = nil
	}
	for _, s := range scenario.SplitList(*vs) {
		if s == "none" {
			continue
		}
		if !slices.Contains(known, s) {
			return nil, fmt.Errorf("-vs: unknown system %q for %s (known: %s)", s, name, strings.Join(known, ", "))
		}
		if !slices.Contains(c.Systems, s) {
			c.Systems = append(c.Systems, s)
		}
	}
	if name == "multipath" && !slices.Contains(c.Systems, "erpc") {
		c.Systems = append(c.Systems, "erpc")
	}
	c.Sizes, c.Conc = []int{nc.size}, []int{1}
	return c, nil
}
