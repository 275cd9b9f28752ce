package stream

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
)

// streamConfig is the stream scenario's part of the command line.
type streamConfig struct {
	streams []int // streams per session (connection) of the rate rows
	slow    bool  // add the slow-consumer rows
	rounds  int
}

// ParseFlags parses "stream [flags]".
func ParseFlags(args []string, stderr io.Writer) (*scenario.Config, error) {
	c := &scenario.Config{Settings: report.Settings{Scenario: "stream", Transport: "udp"}}
	sc := &streamConfig{}
	fs := flag.NewFlagSet("erpc-bench stream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	size := fs.String("size", "32,64K", "message sizes, comma-separated (suffix K or M)")
	streams := fs.String("streams", "1,16", "streams per session (gRPC: per connection), comma-separated")
	fs.BoolVar(&sc.slow, "slow", true, "add a slow-consumer row per size: a stream read one message a millisecond beside one read flat out")
	fs.IntVar(&sc.rounds, "rounds", 2, "rounds per row, the systems alternating (each -d/rounds after its own warm-up)")
	fs.DurationVar(&c.Dur, "d", 2*time.Second, "measured duration of a row's rate per system (the ping-pong runs half as long)")
	fs.DurationVar(&c.Warmup, "warmup", 300*time.Millisecond, "warm-up before each measurement, discarded")
	vs := fs.String("vs", "grpc", "systems beside erpc: grpc (gRPC-Go streaming over TCP loopback) or none")
	fs.BoolVar(&c.JSON, "json", false, "one JSON object per line instead of a table")
	fs.BoolVar(&c.Pin, "pin", true, "pin the server to CPU 0 and the client to CPU 1 (when there are two or more)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if c.Sizes, err = scenario.ParseInts(*size); err != nil {
		return nil, fmt.Errorf("-size: %w", err)
	}
	if sc.streams, err = scenario.ParseInts(*streams); err != nil {
		return nil, fmt.Errorf("-streams: %w", err)
	}
	for _, n := range sc.streams {
		if n < 1 || n > 1024 {
			return nil, fmt.Errorf("-streams: want 1..1024 (erpc's limit per session), not %d", n)
		}
	}
	for _, s := range c.Sizes {
		if s < 1 || s > 4<<20 {
			return nil, fmt.Errorf("-size: want 1 B..4 MiB (a stream's default window), not %d", s)
		}
	}
	if c.Dur <= 0 || c.Warmup < 0 || sc.rounds < 1 || c.Dur/time.Duration(sc.rounds) < 10*time.Millisecond {
		return nil, fmt.Errorf("-d must be positive with rounds of at least 10ms, -rounds at least 1, -warmup not negative")
	}
	c.Systems = []string{"erpc"}
	for _, s := range scenario.SplitList(*vs) {
		switch s {
		case "grpc":
			c.Systems = append(c.Systems, "grpc")
		case "none", "erpc":
		default:
			return nil, fmt.Errorf("-vs: the stream scenario compares erpc with grpc only, not %q", s)
		}
	}
	c.Conc = sc.streams
	c.Ext = sc
	return c, nil
}
