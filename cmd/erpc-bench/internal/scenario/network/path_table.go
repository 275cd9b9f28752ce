//go:build linux

package network

import (
	"encoding/json"
	"fmt"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
)

// pathTable prints a row per run (or writes it as JSON).
type pathTable struct {
	b         *scenario.Bench
	nc        *netConfig
	headerOut bool
}

func (t *pathTable) Add(j report.Record) {
	o := t.b.Out
	o.Done++
	o.Results = append(o.Results, j)
	if o.Cfg.JSON {
		bs, _ := json.Marshal(j)
		fmt.Fprintf(o.W, "%s\n", bs)
		return
	}
	o.ClearBar()
	if !t.headerOut {
		t.headerOut = true
		fmt.Fprintf(o.W, "# path: one path shaped by TBF (queue %s), sessions making %s calls back to back (%d in flight each; with n sessions, calls of size/n); %v per row after %v warm-up; cores %s\n",
			report.HumanSize(t.nc.limit), report.HumanSize(t.nc.size), t.nc.conc, o.Cfg.Dur, o.Cfg.Warmup, o.Cores)
		fmt.Fprintln(o.W, "| system | Mbit/s | sessions | Gb/s    | utilisation | jain  | drops | errors |")
		fmt.Fprintln(o.W, "|--------|--------|----------|---------|-------------|-------|-------|--------|")
	}
	e := j.Extra
	jn := "-"
	if v, ok := e["jain"]; ok {
		jn = fmt.Sprintf("%.3f", v)
	}
	fmt.Fprintf(o.W, "| %-6s | %6.0f | %8d | %7.3f | %11.3f | %5s | %5v | %6d |\n",
		j.System, e["rate_mbit"], j.Sessions, j.Gbps, e["utilization"], jn, e["drops"], j.Errors)
	if j.Error != "" {
		fmt.Fprintf(o.W, "#   %s: first error: %s\n", j.System, j.Error)
	}
}
