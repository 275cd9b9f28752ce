//go:build linux

package network

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
)

// mpTable prints a row per run, then the ratios the issue sets targets
// for.
type mpTable struct {
	b         *scenario.Bench
	nc        *netConfig
	headerOut bool
	rows      []report.Record
}

var mpCols = []string{"Gb/s", "path0", "path1", "small P50", "P99", "P99.9", "rexmit", "drops0", "drops1"}

func (t *mpTable) Add(j report.Record) {
	o := t.b.Out
	o.Done++
	t.rows = append(t.rows, j)
	// The ratios need every row; JSON rows are written at the end.
	if o.Cfg.JSON {
		return
	}
	o.ClearBar()
	if !t.headerOut {
		t.headerOut = true
		nc := t.nc
		fmt.Fprintf(o.W, "# multipath: one session streaming %s calls (%d in flight), one %dB call at a time on a second session; path 0 shaped to %.0f Mbit/s, path 1 to %.0f Mbit/s, queue %s each; %v per system after %v warm-up; cores %s\n",
			report.HumanSize(nc.size), nc.conc, nc.small, float64(nc.slow)/1e6, float64(nc.fast)/1e6, report.HumanSize(nc.limit), o.Cfg.Dur, o.Cfg.Warmup, o.Cores)
		var h, sep strings.Builder
		h.WriteString("| system     | paths | ports (path)         |")
		sep.WriteString("|------------|-------|----------------------|")
		report.HeaderCells(&h, &sep, mpCols, report.ColW)
		fmt.Fprintln(o.W, h.String())
		fmt.Fprintln(o.W, sep.String())
	}
	e := j.Extra
	var ports []string
	hashed := e["port_paths"].([]int)
	for i, p := range e["ports"].([]uint16) {
		ports = append(ports, fmt.Sprintf("%d(%d)", p, hashed[i]))
	}
	pg := e["path_gbps"].([2]float64)
	dr := e["path_drops"].([2]uint64)
	cells := []string{fmt.Sprintf("%.3f", j.Gbps), fmt.Sprintf("%.3f", pg[0]), fmt.Sprintf("%.3f", pg[1]),
		report.HumanUs(j.P50), report.HumanUs(j.P99), report.HumanUs(j.P999), fmt.Sprint(e["retransmits"]), fmt.Sprint(dr[0]), fmt.Sprint(dr[1])}
	var r strings.Builder
	fmt.Fprintf(&r, "| %-10s | %5d | %-20s |", j.System, e["paths"], report.TrimTo(strings.Join(ports, " "), 20))
	for _, c := range cells {
		fmt.Fprintf(&r, " %*s |", report.ColW, c)
	}
	fmt.Fprintln(o.W, r.String())
	if j.Error != "" || j.Errors > 0 {
		fmt.Fprintf(o.W, "#   %s: %d failed calls; first: %s\n", j.System, j.Errors, j.Error)
	}
}

// Finish adds the ratios to the erpc rows and prints them (or writes the
// JSON rows).
func (t *mpTable) Finish() {
	o := t.b.Out
	var one []float64
	spray := map[int]float64{}
	for _, j := range t.rows {
		switch j.System {
		case "erpc-1path":
			one = append(one, j.Gbps)
		case "erpc-spray":
			spray[j.Extra["paths"].(int)] = j.Gbps
		}
	}
	oneMean := meter.Mean(one)
	var lines []string
	for i := range t.rows {
		j := &t.rows[i]
		if j.System != "erpc" {
			continue
		}
		k := j.Extra["paths"].(int)
		line := fmt.Sprintf("#   erpc K=%d: %.3f Gb/s", k, j.Gbps)
		if len(one) == 2 && oneMean > 0 {
			r := j.Gbps / oneMean
			j.Extra["vs_1path"] = report.Round3(r)
			line += fmt.Sprintf(", %.2fx the mean single path (%.3f, %.3f: mean %.3f; target >= 1.8: %s)", r, one[0], one[1], oneMean,
				map[bool]string{true: "met", false: "MISSED"}[r >= 1.8])
		}
		if s := spray[k]; s > 0 {
			r := j.Gbps / s
			j.Extra["vs_spray"] = report.Round3(r)
			line += fmt.Sprintf(", %.2fx blind spraying over the same ports (%.3f; target >= 2.5: %s)", r, s,
				map[bool]string{true: "met", false: "MISSED"}[r >= 2.5])
		}
		lines = append(lines, line)
	}
	for _, j := range t.rows {
		o.Results = append(o.Results, j)
		if o.Cfg.JSON {
			bs, _ := json.Marshal(j)
			fmt.Fprintf(o.W, "%s\n", bs)
		}
	}
	if !o.Cfg.JSON {
		o.ClearBar()
		for _, l := range lines {
			fmt.Fprintln(o.W, l)
		}
	}
}
