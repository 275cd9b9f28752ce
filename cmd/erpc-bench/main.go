package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario/fleet"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario/network"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario/raft"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario/slo"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario/stream"
)

func main() {
	if os.Getenv(proc.ChildEnv) == "1" || (len(os.Args) > 1 && os.Args[1] == "serve") {
		args := os.Args[1:]
		if len(args) > 0 && args[0] == "serve" {
			args = args[1:]
		}
		if err := proc.Serve(args); err != nil {
			fmt.Fprintln(os.Stderr, "erpc-bench serve:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "erpc-bench:", err)
		}
		os.Exit(2)
	}
}

// run is the client: it parses args, starts the servers, measures and
// reports.
func run(args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	cfg.Progress = !cfg.JSON && isTerminal(stderr)
	b := &scenario.Bench{Cfg: cfg, Out: report.NewOutput(&cfg.Settings, stdout, stderr)}
	b.Pin()
	err = runScenario(b)
	b.Out.Finish()
	if cfg.Plot != "" && len(b.Out.Results) > 0 {
		if perr := writePlotFile(cfg.Plot, cfg.Scenario, b.Out.Results); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	return err
}

// scenarioNames are the scenarios, in the usage message's order.
var scenarioNames = []string{"latency", "rate", "table", "bandwidth", "sessions", "loss", "handshake", "slo", "raft", "stream", "incast", "multipath", "path", "fleet"}

// parseFlags parses the command line: the scenario, then its flags.
func parseFlags(args []string, stderr io.Writer) (*scenario.Config, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil, fmt.Errorf("usage: erpc-bench <scenario> [flags]; scenarios: %s", strings.Join(scenarioNames, " "))
	}
	switch args[0] {
	case "raft":
		return raft.ParseFlags(args[1:], stderr)
	case "slo":
		return slo.ParseFlags(args[1:], stderr)
	case "stream":
		return stream.ParseFlags(args[1:], stderr)
	case "incast", "multipath", "path":
		return network.ParseFlags(args[0], args[1:], stderr)
	case "fleet":
		return fleet.ParseFlags(args[1:], stderr)
	}
	return scenario.ParseGridFlags(args, stderr)
}

// runScenario runs the scenario the command line names.
func runScenario(b *scenario.Bench) error {
	switch b.Cfg.Scenario {
	case "latency", "rate", "table", "bandwidth":
		if b.Cfg.Blocking {
			return b.RunBlocking()
		}
		if b.Cfg.Transport == "xdp" {
			return network.RunVeth(b)
		}
		return b.RunGrid(0, nil)
	case "sessions":
		return b.RunSessions()
	case "handshake":
		return b.RunHandshake()
	case "loss":
		if b.Cfg.Testbed {
			return network.RunLossTestbed(b)
		}
		return b.RunLoss()
	case "raft":
		return raft.Run(b)
	case "slo":
		return slo.Run(b)
	case "stream":
		return stream.Run(b)
	case "incast":
		return network.RunIncast(b)
	case "multipath":
		return network.RunMultipath(b)
	case "fleet":
		return fleet.Run(b)
	case "path":
		return network.RunPath(b)
	}
	return scenario.ErrNotBuilt(b.Cfg.Scenario)
}

func writePlotFile(path, scenario string, recs []report.Record) error {
	return os.WriteFile(path, plotSVG(scenario, recs), 0o644)
}

// plotSVG draws the scenario's plot.
func plotSVG(scenario string, recs []report.Record) []byte {
	switch scenario {
	case "slo":
		return slo.PlotSVG(recs)
	case "incast":
		return network.IncastPlotSVG(recs)
	}
	return report.GridPlotSVG(scenario, recs)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
