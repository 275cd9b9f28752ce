package fleet

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
)

// emit writes one row: with -json the contract's record, whose scenario
// is the part (kill, drain, ...: the rows of the fleet scenario are named
// by what happened to the fleet); else a table line.
func emit(b *scenario.Bench, part string, r meter.Result) {
	if b.Cfg.JSON {
		b.Cfg.Scenario = part
		b.Out.Add(r)
		b.Cfg.Scenario = "fleet"
		return
	}
	if b.Out.Done == 0 {
		fmt.Fprintf(b.Out.W, "# fleet: open-loop load over replicas in network namespaces, %v per phase after %v warm-up\n", b.Cfg.Dur, b.Cfg.Warmup)
		fmt.Fprintf(b.Out.W, "| %-13s | %-7s | %7s | %6s | %8s | %8s | %-32s | %s\n", "scenario", "system", "calls", "failed", "P50", "P99", "per_server", "")
	}
	b.Out.Done++
	if r.Err != nil {
		fmt.Fprintf(b.Out.W, "| %-13s | %-7s | error: %v\n", part, r.System, r.Err)
		return
	}
	x := r.Extra
	var ps []string
	for _, v := range x["per_server"].([]float64) {
		ps = append(ps, fmt.Sprintf("%.2f", v))
	}
	common := []string{"calls", "failed", "per_server", "balancer", "rate", "service_us", "clients", "target"}
	var notes []string
	for _, k := range slices.Sorted(maps.Keys(x)) {
		if !slices.Contains(common, k) {
			notes = append(notes, fmt.Sprintf("%s=%v", k, x[k]))
		}
	}
	fmt.Fprintf(b.Out.W, "| %-13s | %-7s | %7d | %6d | %8s | %8s | %-32s | %s\n", part, r.System, x["calls"], x["failed"],
		report.HumanUs(r.H.Quantile(0.5)/1e3), report.HumanUs(r.H.Quantile(0.99)/1e3), strings.Join(ps, " "), strings.Join(notes, " "))
	if r.FirstErr != nil {
		fmt.Fprintf(b.Out.W, "#   %s %s: %v\n", part, r.System, r.FirstErr)
	}
}
