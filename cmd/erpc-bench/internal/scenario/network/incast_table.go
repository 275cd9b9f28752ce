//go:build linux

package network

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
)

// incastTrace is a row's last incast, per sender, for the plot (and the
// JSON rows' "trace" when -plot is given).
type incastTrace struct {
	WindowMS int         `json:"window_ms"`
	Mbps     [][]float64 `json:"mbps"` // [sender][window]
	FairMbps float64     `json:"fair_mbps"`
}

func incastRecord(b *scenario.Bench, s *incastSystem, n int, ideal time.Duration) report.Record {
	nc := b.Cfg.Ext.(*netConfig)
	a := &s.acc
	us := func(ns float64) float64 { return report.Round3(ns / 1e3) }
	ops := int64(a.calls - a.failed)
	j := report.Record{
		Scenario: "incast", System: s.name, Transport: s.tr,
		Size: nc.size, RespSize: 32, Concurrency: nc.size / nc.chunk, Sessions: n,
		DurationS: report.Round3(a.secs), Ops: ops, Errors: int64(a.failed),
		P50: us(a.fct.Quantile(0.5)), P90: us(a.fct.Quantile(0.9)), P99: us(a.fct.Quantile(0.99)),
		P999: us(a.fct.Quantile(0.999)), AllocsPerOp: -1, Cores: b.Out.Cores,
		MeanUs: us(a.fct.Mean()), MaxUs: us(float64(a.fct.Max)),
	}
	if a.secs > 0 {
		j.QPS = report.Round3(float64(ops) / a.secs)
		j.Gbps = report.Round3(float64(ops) * float64(nc.chunk+32) * 8 / a.secs / 1e9)
	}
	if a.firstErr != nil {
		j.Error = a.firstErr.Error()
	}
	p99 := a.fct.Quantile(0.99)
	j.Extra = map[string]any{
		"senders":         n,
		"utilization":     report.Round3(utilization(a.qbytes, nc.rate, a.secs)),
		"utilization_min": report.Round3(a.utilMin),
		"jain":            report.Round3(meter.Mean(a.jains)),
		"jain_min":        report.Round3(a.jainMin),
		"fct_p99_ideal":   report.Round3(p99 / float64(ideal)),
		"fct_max_ideal":   report.Round3(float64(a.fct.Max) / float64(ideal)),
		"ideal_us":        us(float64(ideal)),
		"failed":          a.failed,
		"retransmits":     a.rexmit,
		"drops":           a.drops,
		"max_queue_bytes": a.maxQueue,
		"rate_mbit":       report.Round3(float64(nc.rate) / 1e6),
		"queue_limit":     nc.limit,
		"bottleneck":      map[bool]string{false: "tbf", true: "htb"}[nc.htb],
		"incasts":         a.n,
	}
	if b.Cfg.Plot != "" && a.last != nil {
		j.Extra["trace"] = &incastTrace{WindowMS: int(incastWindow / time.Millisecond), Mbps: a.last.trace,
			FairMbps: report.Round3(float64(nc.rate) / 1e6 / float64(n))}
	}
	return j
}

// incastTable prints the rows, one per (senders, system), and the notes.
type incastTable struct {
	b         *scenario.Bench
	nc        *netConfig
	headerOut bool
	rows      []report.Record
}

var incastCols = []string{"Gb/s", "util", "Jain", "FCT p50", "p99", "max", "ideal", "p99/ideal", "rexmit", "drops", "failed", "maxQ"}

func (t *incastTable) Add(j report.Record) {
	o := t.b.Out
	o.Done++
	o.Results = append(o.Results, j)
	t.rows = append(t.rows, j)
	if o.Cfg.JSON {
		bs, _ := json.Marshal(j)
		fmt.Fprintf(o.W, "%s\n", bs)
		return
	}
	o.ClearBar()
	if !t.headerOut {
		t.headerOut = true
		nc := t.nc
		kind := "TBF"
		if nc.htb {
			kind = "HTB+bfifo"
		}
		fmt.Fprintf(o.W, "# incast: N senders x %s each (calls of %s) at once to one server through a %s bottleneck of %.0f Mbit/s, burst %s, queue %s; %d incasts per row after %d discarded; cores %s\n",
			report.HumanSize(nc.size), report.HumanSize(nc.chunk), kind, float64(nc.rate)/1e6, report.HumanSize(nc.burst), report.HumanSize(nc.limit), nc.reps, nc.warm, o.Cores)
		var h, sep strings.Builder
		h.WriteString("| senders |     size | system     |")
		sep.WriteString("|---------|----------|------------|")
		report.HeaderCells(&h, &sep, incastCols, report.ColW)
		fmt.Fprintln(o.W, h.String())
		fmt.Fprintln(o.W, sep.String())
	}
	e := j.Extra
	cells := []string{
		fmt.Sprintf("%.3f", j.Gbps),
		fmt.Sprintf("%.3f", e["utilization"]),
		fmt.Sprintf("%.3f", e["jain"]),
		report.HumanUs(j.P50), report.HumanUs(j.P99), report.HumanUs(j.MaxUs), report.HumanUs(e["ideal_us"].(float64)),
		fmt.Sprintf("%.2f", e["fct_p99_ideal"]),
		fmt.Sprint(e["retransmits"]), fmt.Sprint(e["drops"]), fmt.Sprint(e["failed"]),
		report.HumanSize(int(e["max_queue_bytes"].(uint32))),
	}
	var r strings.Builder
	fmt.Fprintf(&r, "| %7d | %8s | %-10s |", e["senders"], report.HumanSize(j.Size), j.System)
	for _, c := range cells {
		fmt.Fprintf(&r, " %*s |", report.ColW, c)
	}
	fmt.Fprintln(o.W, r.String())
	if j.Error != "" {
		fmt.Fprintf(o.W, "#   %s, %v senders: %d calls failed; first: %s\n", j.System, e["senders"], j.Errors, j.Error)
	}
}

// Finish prints each row's targets (issue 15) after the table.
func (t *incastTable) Finish() {
	o := t.b.Out
	if o.Cfg.JSON || len(t.rows) == 0 {
		return
	}
	fmt.Fprintln(o.W, "# targets for erpc: utilisation >= 0.90, Jain >= 0.95, p99 FCT <= 1.5 x ideal, no failed call")
	sort.SliceStable(t.rows, func(a, c int) bool { return t.rows[a].Sessions < t.rows[c].Sessions })
	for _, j := range t.rows {
		e := j.Extra
		ok := func(b bool) string { return map[bool]string{true: "met", false: "MISSED"}[b] }
		fmt.Fprintf(o.W, "#   %-10s %3v senders: utilisation %.3f (worst incast %.3f) %s, Jain %.3f (worst incast %.3f) %s, p99 FCT %.2fx ideal %s, %v failed\n",
			j.System, e["senders"], e["utilization"], e["utilization_min"], ok(e["utilization"].(float64) >= 0.9),
			e["jain"], e["jain_min"], ok(e["jain"].(float64) >= 0.95), e["fct_p99_ideal"], ok(e["fct_p99_ideal"].(float64) <= 1.5), e["failed"])
	}
}
