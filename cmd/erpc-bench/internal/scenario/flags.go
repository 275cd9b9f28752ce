package scenario

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// Config is the parsed command line of a client run.
type Config struct {
	report.Settings
	Sizes    []int
	Conc     []int
	Sessions []int
	Loss     []float64
	Resp     int // response size; 0 = echo (same as the request)
	Plot     string
	quick    bool
	Pin      bool
	Window   int
	// rateSessions: the rate scenario's erpc sessions per point (-sessions).
	rateSessions int
	RawDgram     int
	rounds       int // grid scenarios: interleaved rounds per point (RunGrid)
	rawWindow    int
	// Ext is the scenario's own part of the command line, typed by the
	// package that parsed it (slo: *sloConfig; raft: *raftConfig;
	// incast, multipath: *netConfig).
	Ext     any
	Testbed bool // loss: over nftables loss on a namespace testbed (package scenario/network, loss.go)
	// Blocking: latency, each point unloaded and under blocking calls on
	// another session (blocking.go).
	Blocking bool
	// AfterLoad: sessions, how long after the 64 KiB load the server's
	// resident set is read again (memory.go).
	AfterLoad time.Duration
	// Dials: the handshake scenario's fresh sessions per system
	// (handshake.go).
	Dials int
}

// scenarioDefaults are the per-scenario defaults of -size and -c, with the
// reduced grid for -quick.
type defaults struct{ sizes, conc, quickSizes, quickConc string }

var scenarioDefaults = map[string]defaults{
	"latency":   {"32,1024,65536", "1", "32,65536", "1"},
	"rate":      {"32", "1,8,64,256", "32", "1,64"},
	"table":     {"128,4K,32K,256K,1M,8M", "1,4,16,64,256", "128,32K,1M", "1,16"},
	"bandwidth": {"8M", "1,8", "8M", "8"},
	"sessions":  {"32", "8", "32", "8"},
	"loss":      {"32,64K", "8", "32", "8"},
	"handshake": {"32", "1", "32", "1"},
}

// ParseGridFlags parses the command line of the scenarios that measure
// a grid of points on the systems (latency, rate, table, bandwidth,
// sessions, loss); args[0] is the scenario.
func ParseGridFlags(args []string, stderr io.Writer) (*Config, error) {
	c := &Config{Settings: report.Settings{Scenario: args[0]}}
	d, ok := scenarioDefaults[c.Scenario]
	if !ok {
		return nil, ErrNotBuilt(c.Scenario)
	}
	fs := flag.NewFlagSet("erpc-bench "+c.Scenario, flag.ContinueOnError)
	fs.SetOutput(stderr)
	size := fs.String("size", "", "request sizes, comma-separated (suffix K or M for KiB, MiB); default per scenario")
	conc := fs.String("c", "", "calls in flight, comma-separated; default per scenario")
	sess := fs.String("sessions", "1,1000,20000", "sessions scenario: numbers of sessions; rate: the erpc sessions a point's calls are spread over (one number)")
	loss := fs.String("loss", "0,1e-5,1e-3,1e-2", "loss scenario: packet loss probabilities (0 is always added as the reference)")
	fs.IntVar(&c.Resp, "resp", 0, "response size in bytes (0: echo the request; bandwidth: 32)")
	fs.DurationVar(&c.Dur, "d", 2*time.Second, "measured duration per point")
	fs.DurationVar(&c.Warmup, "warmup", 300*time.Millisecond, "warm-up per point, discarded")
	fs.DurationVar(&c.AfterLoad, "after-load", 10*time.Second, "sessions scenario: when, after its 64 KiB load ends, the server's resident set is read again")
	vs := fs.String("vs", "raw-udp,grpc", "systems to run beside erpc, comma-separated, or all: "+strings.Join(systems.All[1:], ","))
	fs.StringVar(&c.Transport, "transport", "udp", "erpc transport: udp, tcp, shm, memnet, or xdp (latency and rate: erpc over AF_XDP between two network namespaces joined by veth, beside erpc-udp and raw-udp on the same pair; needs root)")
	fs.IntVar(&c.rounds, "rounds", 1, "latency, rate, table, bandwidth, loss (not -testbed): measure each point in this many rounds per system, the systems alternating round by round (each round d/rounds after its own warm-up), so that drift over the run affects all systems alike")
	fs.BoolVar(&c.JSON, "json", false, "one JSON object per line instead of a table")
	fs.StringVar(&c.Plot, "plot", "", "write an SVG plot (p50 latency and throughput by size) to this file")
	fs.BoolVar(&c.Busy, "busy", false, "busy-poll on both sides (erpc.WithBusyPoll; raw-udp spins on non-blocking sockets)")
	fs.BoolVar(&c.quick, "quick", false, "reduced grid")
	fs.BoolVar(&c.Pin, "pin", true, "pin the server to CPU 0 and the client to CPU 1 (when there are two or more)")
	fs.IntVar(&c.Window, "window", 0, "erpc: concurrent requests per session, and as many credits (0: library default; rate: the largest -c, the window raw-udp streams with)")
	fs.IntVar(&c.RawDgram, "raw-dgram", 0, "raw-udp: datagram size in bytes (0: the size erpc's UDP transport uses on loopback)")
	fs.IntVar(&c.rawWindow, "raw-window", 0, "raw-udp: request bytes in flight, unacknowledged (0: 4 MiB)")
	fs.BoolVar(&c.Testbed, "testbed", false, "loss: client and server in two network namespaces joined by a veth, nftables dropping -loss of the UDP datagrams each receives (needs root), gRPC over TCP beside erpc")
	fs.BoolVar(&c.Blocking, "blocking", false, fmt.Sprintf("latency: erpc only; each point measured unloaded and again while another session keeps %d calls in flight to a handler that blocks %v (registered with Server.Handle, no options); -window defaults to %d", BlockingInflight, systems.BlockFor, 2*BlockingInflight))
	fs.IntVar(&c.Dials, "dials", 200, "handshake: fresh sessions timed per system (its -vs defaults to "+handshakeVs+")")
	if err := fs.Parse(args[1:]); err != nil {
		return nil, err
	}
	if c.Scenario == "handshake" && !flagGiven(fs, "vs") {
		*vs = handshakeVs
	}
	if c.Dials < 1 {
		return nil, fmt.Errorf("-dials must be at least 1")
	}
	if c.Blocking && c.Scenario != "latency" {
		return nil, fmt.Errorf("-blocking is a flag of the latency scenario")
	}
	if c.Blocking && c.Window == 0 {
		// A session's window is the smaller of its two ends': the
		// server's must let the load's calls all be in flight at once.
		c.Window = 2 * BlockingInflight
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *size == "" {
		*size = d.sizes
		if c.quick {
			*size = d.quickSizes
		}
	}
	if *conc == "" {
		*conc = d.conc
		if c.quick {
			*conc = d.quickConc
		}
	}
	var err error
	if c.Sizes, err = ParseInts(*size); err != nil {
		return nil, fmt.Errorf("-size: %w", err)
	}
	if c.Conc, err = ParseInts(*conc); err != nil {
		return nil, fmt.Errorf("-c: %w", err)
	}
	if c.Scenario == "latency" {
		c.Conc = []int{1}
	}
	if c.Sessions, err = ParseInts(*sess); err != nil {
		return nil, fmt.Errorf("-sessions: %w", err)
	}
	if c.Scenario == "sessions" && c.quick {
		c.Sessions = []int{1, 1000}
	}
	if c.Scenario == "rate" {
		// -sessions spreads each point's calls over that many erpc
		// sessions of the client endpoint, round robin.
		c.rateSessions = 1
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "sessions" {
				c.rateSessions = c.Sessions[0]
			}
		})
		if c.Window == 0 {
			// The window is per session: the calls of one.
			c.Window = (slices.Max(c.Conc) + c.rateSessions - 1) / c.rateSessions
		}
	}
	for _, f := range SplitList(*loss) {
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || p < 0 || p >= 1 {
			return nil, fmt.Errorf("-loss: bad probability %q", f)
		}
		c.Loss = append(c.Loss, p)
	}
	if c.Scenario == "bandwidth" && c.Resp == 0 {
		c.Resp = 32
	}
	switch c.Transport {
	case "udp", "tcp", "shm", "memnet":
	case "xdp":
		if c.Scenario != "latency" && c.Scenario != "rate" {
			return nil, fmt.Errorf("-transport xdp: latency and rate only")
		}
	default:
		return nil, fmt.Errorf("-transport: want udp, tcp, shm, memnet or xdp, not %q", c.Transport)
	}
	if c.Dur <= 0 || c.Warmup < 0 {
		return nil, fmt.Errorf("-d must be positive and -warmup not negative")
	}
	if c.rounds < 1 || c.Dur/time.Duration(c.rounds) < 10*time.Millisecond {
		return nil, fmt.Errorf("-rounds must be at least 1, with rounds of at least 10ms (-d %v)", c.Dur)
	}
	if c.RawDgram != 0 && (c.RawDgram < 64 || c.RawDgram > 65507) {
		return nil, fmt.Errorf("-raw-dgram: want 0 or 64..65507")
	}
	c.Systems = []string{"erpc"}
	list := SplitList(*vs)
	if len(list) == 1 && list[0] == "all" {
		list = systems.All[1:]
	}
	for _, s := range list {
		if s == "udp" { // erpc over UDP, beside erpc over -transport
			s = "erpc-udp"
		}
		if c.Transport == "xdp" && !slices.Contains(systems.VethSystems, s) {
			return nil, fmt.Errorf("-vs %s: over the veth pair only %v run", s, systems.VethSystems)
		}
		if !systems.Known(s) {
			return nil, fmt.Errorf("-vs: unknown system %q (known: %s)", s, strings.Join(systems.All, ", "))
		}
		if s != "erpc" && !slices.Contains(c.Systems, s) {
			c.Systems = append(c.Systems, s)
		}
	}
	if c.Scenario == "bandwidth" {
		// The reference for bytes moved: a plain copy in one process.
		c.Systems = append(c.Systems, "memcpy")
	}
	switch {
	case c.Scenario == "loss" && c.Testbed:
		// The network drops packets: erpc beside gRPC over TCP.
		c.Systems = testbedLossSystems(c.Systems)
	case c.Scenario == "sessions" || c.Scenario == "loss" || c.Blocking:
		// Only erpc has sessions to multiplex and loss injection to recover
		// from; the others would measure nothing comparable. Their
		// servers have no Block handler either.
		c.Systems = onlyErpc(c.Systems)
	}
	return c, nil
}

// testbedLossSystems keeps the systems loss -testbed runs: erpc's and
// gRPC.
func testbedLossSystems(s []string) []string {
	var out []string
	for _, x := range s {
		if x == "erpc" || x == "erpc-call" || x == "grpc" {
			out = append(out, x)
		}
	}
	return out
}

func onlyErpc(s []string) []string {
	var out []string
	for _, x := range s {
		if x == "erpc" || x == "erpc-call" {
			out = append(out, x)
		}
	}
	return out
}

// flagGiven says whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ParseInts parses a list like "128,4K,8M" (K and M are powers of two).
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range SplitList(s) {
		v, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// ParseSize parses a size such as "4K" or "8MiB" (powers of two).
func ParseSize(f string) (int, error) {
	mult := 1
	u := strings.ToUpper(f)
	u = strings.TrimSuffix(strings.TrimSuffix(u, "B"), "I")
	switch {
	case strings.HasSuffix(u, "K"):
		mult, u = 1<<10, u[:len(u)-1]
	case strings.HasSuffix(u, "M"):
		mult, u = 1<<20, u[:len(u)-1]
	}
	v, err := strconv.Atoi(u)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad number %q", f)
	}
	return v * mult, nil
}

// ErrNotBuilt is the error of a scenario that does not exist yet.
func ErrNotBuilt(s string) error {
	return fmt.Errorf("unknown scenario %q: not built yet (built: latency rate table bandwidth sessions loss handshake slo raft stream incast multipath path fleet)", s)
}
