package raft

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// raftConfig is the raft scenario's part of the command line.
type raftConfig struct {
	spin      time.Duration // erpc.WithSpin for the client and erpc's replicas, or spinDefault
	inflight  int           // contrib/raft Config.MaxInFlight
	rounds    int           // alternating rounds; -d is split between them
	breakdown time.Duration // leader-side Apply measurement per system
}

// ParseFlags parses "raft [flags]".
func ParseFlags(args []string, stderr io.Writer) (*scenario.Config, error) {
	c := &scenario.Config{Settings: report.Settings{Scenario: "raft", Transport: "udp"}, Sizes: []int{raftKeySize + raftValueSize}, Conc: []int{1}}
	rc := raftConfig{}
	fs := flag.NewFlagSet("erpc-bench raft", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&c.Dur, "d", 3*time.Second, "measured duration per system (split between the rounds)")
	fs.DurationVar(&c.Warmup, "warmup", 500*time.Millisecond, "warm-up before each round, discarded")
	vs := fs.String("vs", "", "systems to run beside erpc: raft-tcp (hashicorp/raft's NetworkTransport on TCP loopback), "+
		SysRawNode+" (etcd raft's RawNode on each replica's erpc event loop), all")
	fs.BoolVar(&c.JSON, "json", false, "one JSON object per line instead of a table")
	fs.BoolVar(&c.Pin, "pin", true, "pin the cluster process to CPU 0 and the client to CPU 1 (when there are two or more)")
	fs.StringVar(&c.Transport, "transport", "udp", "erpc transport of the replicas and the client: udp (loopback) or shm (same host; raft-tcp still replicates over TCP)")
	// Several endpoints share the cluster's core: equal fixed spins keep
	// any of them from parking while the others poll (see erpc.WithSpin).
	rc.spin = time.Millisecond
	fs.Func("spin", "erpc event-loop spin after work (erpc.WithSpin) for the client and erpc's replicas, or \"default\" for erpc's adaptive window (default 1ms; raft-tcp's replicas get 0)", func(v string) (err error) {
		rc.spin, err = systems.ParseSpin(v)
		return err
	})
	fs.IntVar(&rc.inflight, "inflight", 0, "contrib/raft pipeline depth (Config.MaxInFlight; 0: default, 1: no pipelining)")
	fs.IntVar(&rc.rounds, "rounds", 2, "rounds per system, in alternating order (A B B A ...)")
	fs.DurationVar(&rc.breakdown, "breakdown", time.Second, "time per system spent measuring raft.Apply on the leader (0: skip)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.Transport != "udp" && c.Transport != "shm" {
		return nil, fmt.Errorf("-transport: the raft scenario runs on udp or shm (the cluster is another process)")
	}
	if c.Dur <= 0 || c.Warmup < 0 || rc.rounds < 1 || rc.breakdown < 0 {
		return nil, fmt.Errorf("-d and -rounds must be positive, -warmup and -breakdown not negative")
	}
	c.Systems = []string{"erpc"}
	// -vs names and the systems they add.
	raftSystems := map[string][]string{"erpc": nil, "raft-tcp": {"raft-tcp"}, SysRawNode: {SysRawNode},
		"rawnode": {SysRawNode}, "all": {"raft-tcp", SysRawNode}}
	for _, s := range scenario.SplitList(*vs) {
		add, ok := raftSystems[s]
		if !ok {
			return nil, fmt.Errorf("-vs: the raft scenario compares erpc with raft-tcp and %s only, not %q", SysRawNode, s)
		}
		for _, s := range add {
			if !slices.Contains(c.Systems, s) {
				c.Systems = append(c.Systems, s)
			}
		}
	}
	c.Ext = &rc
	return c, nil
}
