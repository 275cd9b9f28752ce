package raftbench

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestExperiment runs one configuration chosen by environment variables
// (RB_EXP=1 to run; RB_TR, RB_NET, RB_SPIN, RB_INFLIGHT, RB_DIRECT), for
// measurements by hand such as raft.Apply over memnet; skipped otherwise.
func TestExperiment(t *testing.T) {
	if os.Getenv("RB_EXP") == "" {
		t.Skip()
	}
	cfg := Config{Transport: os.Getenv("RB_TR"), Network: os.Getenv("RB_NET"), Warmup: 300 * time.Millisecond, Duration: 2 * time.Second}
	if v := os.Getenv("RB_SPIN"); v != "" {
		d, _ := time.ParseDuration(v)
		cfg.EndpointOptions = append(cfg.EndpointOptions, erpc.WithSpin(d))
	}
	if v := os.Getenv("RB_INFLIGHT"); v != "" {
		cfg.ErpcTransport.MaxInFlight, _ = strconv.Atoi(v)
	}
	cfg.Direct = os.Getenv("RB_DIRECT") != ""
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
}
