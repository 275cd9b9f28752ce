package fleet

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
)

// Scenarios are the fleet scenario's parts, in the order they run.
var Scenarios = []string{"kill", "drain", "add", "slow", "restart-storm"}

// grpcScenarios are the parts gRPC's row is measured in.
var grpcScenarios = []string{"kill", "drain", "add", "slow"}

// fleetConfig is the fleet scenario's command line.
type fleetConfig struct {
	servers     int
	rate        float64 // calls per second, all clients together
	scenarios   []string
	service     time.Duration // every replica's service time (the slow one: 10x)
	size        int           // request bytes
	connectRate float64       // erpc.WithConnectRate, per client
	stormProcs  int           // restart-storm: client processes
	stormCli    int           // restart-storm: erpc Clients per process
	lanes       int           // open-loop lanes per client process
	cc          bool          // erpc: congestion control on (the default)
	dnsPeriod   time.Duration // erpc: the dns:/// resolver's period
}

// ParseFlags parses "fleet [flags]".
func ParseFlags(args []string, stderr io.Writer) (*scenario.Config, error) {
	c := &scenario.Config{Settings: report.Settings{Scenario: "fleet", Transport: "udp"}}
	fc := &fleetConfig{}
	c.Ext = fc
	fs := flag.NewFlagSet("erpc-bench fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&fc.servers, "servers", 4, "replicas behind the name at the start (add starts one more)")
	fs.Float64Var(&fc.rate, "rate", 2000, "offered load, calls per second (Poisson, open loop), all clients together")
	fs.DurationVar(&c.Dur, "d", 5*time.Second, "duration of each phase (before and after the fleet changes); kill needs more than the failure-detection time (2 s)")
	fs.DurationVar(&c.Warmup, "warmup", time.Second, "load before the first phase, discarded")
	parts := fs.String("scenarios", strings.Join(Scenarios, ","), "what happens to the fleet, comma-separated: "+strings.Join(Scenarios, ", "))
	vs := fs.String("vs", "grpc", "peers beside erpc: grpc (round_robin over dns:///; in "+strings.Join(grpcScenarios, ", ")+"), or none")
	fs.DurationVar(&fc.service, "service", 500*time.Microsecond, "every replica's service time (a handler delay); slow's replica has 10x")
	fs.IntVar(&fc.size, "size", 32, "request size in bytes (the answer is 4: the replica's address)")
	fs.Float64Var(&fc.connectRate, "connect-rate", 2, "erpc.WithConnectRate, connects per second per client (low by default so that restart-storm's bound binds: 200 clients × 4 replicas at 2/s each take 2 s)")
	fs.IntVar(&fc.stormProcs, "storm-procs", 4, "restart-storm: client processes")
	fs.IntVar(&fc.stormCli, "storm-clients", 50, "restart-storm: erpc Clients per client process (each keeps a session to every replica)")
	fs.IntVar(&fc.lanes, "lanes", 2, "open-loop lanes (sending goroutines) per client process")
	fs.DurationVar(&fc.dnsPeriod, "dns-period", 500*time.Millisecond, "erpc: how often the dns:/// resolver looks the name up (resolver.WithDNSPeriod; 0: the library's default, 30 s); gRPC's resolver keeps its own (on a connection's failure, at most every 30 s)")
	fs.BoolVar(&fc.cc, "cc", true, "erpc: congestion control (false: erpc.WithoutCongestionControl, for a machine whose CPU contention inflates round trips)")
	fs.BoolVar(&c.JSON, "json", false, "one JSON object per line instead of a table")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if fc.servers < 2 || fc.servers > 32 {
		return nil, fmt.Errorf("-servers %d: want 2 to 32", fc.servers)
	}
	if fc.rate <= 0 || c.Dur <= 0 || c.Warmup < 0 || fc.service < 0 || fc.dnsPeriod < 0 || fc.size < 1 || fc.lanes < 1 {
		return nil, fmt.Errorf("-rate, -d, -size and -lanes must be positive, -warmup, -service and -dns-period not negative")
	}
	if fc.connectRate <= 0 || fc.stormProcs < 1 || fc.stormCli < 1 || fc.stormProcs > 16 {
		return nil, fmt.Errorf("-connect-rate and -storm-clients must be positive, -storm-procs 1 to 16")
	}
	for _, s := range scenario.SplitList(*parts) {
		if !slices.Contains(Scenarios, s) {
			return nil, fmt.Errorf("-scenarios: unknown %q (known: %s)", s, strings.Join(Scenarios, ", "))
		}
		if !slices.Contains(fc.scenarios, s) {
			fc.scenarios = append(fc.scenarios, s)
		}
	}
	if len(fc.scenarios) == 0 {
		return nil, fmt.Errorf("-scenarios: none given")
	}
	c.Systems = []string{"erpc"}
	for _, s := range scenario.SplitList(*vs) {
		switch s {
		case "none":
		case "grpc":
			if !slices.Contains(c.Systems, s) {
				c.Systems = append(c.Systems, s)
			}
		default:
			return nil, fmt.Errorf("-vs: unknown system %q for fleet (known: grpc)", s)
		}
	}
	c.Sizes, c.Conc = []int{fc.size}, []int{1}
	return c, nil
}
