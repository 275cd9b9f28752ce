package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// jsonRecord is one line of -json output. The fields up to Cores are the
// benchmark contract's and must keep their names; the rest are extras.
type jsonRecord struct {
	Scenario    string  `json:"scenario"`
	System      string  `json:"system"`
	Transport   string  `json:"transport"`
	Size        int     `json:"size"`
	RespSize    int     `json:"resp_size"`
	Concurrency int     `json:"concurrency"`
	Sessions    int     `json:"sessions"`
	DurationS   float64 `json:"duration_s"`
	Ops         int64   `json:"ops"`
	Errors      int64   `json:"errors"`
	QPS         float64 `json:"qps"`
	Gbps        float64 `json:"gbps"`
	P50         float64 `json:"p50_us"`
	P90         float64 `json:"p90_us"`
	P99         float64 `json:"p99_us"`
	P999        float64 `json:"p999_us"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	Cores       string  `json:"cores"`

	MeanUs   float64        `json:"mean_us"`
	MaxUs    float64        `json:"max_us"`
	Busy     bool           `json:"busy"`
	GBps     float64        `json:"gbytes_per_s,omitempty"` // request bytes per second / 1e9 (bandwidth)
	Inflight int            `json:"inflight,omitempty"`     // calls in flight, where the system caps -c
	Error    string         `json:"error,omitempty"`        // the point could not be measured, or the first failed call
	Extra    map[string]any `json:"-"`
}

// MarshalJSON flattens Extra into the object.
func (r jsonRecord) MarshalJSON() ([]byte, error) {
	type plain jsonRecord
	b, err := json.Marshal(plain(r))
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	e, err := json.Marshal(r.Extra)
	if err != nil {
		return nil, err
	}
	return append(append(b[:len(b)-1], ','), e[1:]...), nil
}

// record turns a result into its JSON form.
func record(scenario, cores string, busy bool, r result) jsonRecord {
	us := func(ns float64) float64 {
		if math.IsNaN(ns) {
			return 0
		}
		return round3(ns / 1e3)
	}
	j := jsonRecord{
		Scenario: scenario, System: r.system, Transport: r.tr,
		Size: r.p.size, RespSize: r.p.resp, Concurrency: r.p.conc, Sessions: sessionsOf(r.system, r.p.sessions),
		DurationS: round3(r.secs), Ops: r.ops, Errors: r.errs,
		P50: us(r.h.quantile(0.50)), P90: us(r.h.quantile(0.90)),
		P99: us(r.h.quantile(0.99)), P999: us(r.h.quantile(0.999)),
		AllocsPerOp: round3(r.allocs), Cores: cores,
		MeanUs: us(r.h.mean()), MaxUs: us(float64(r.h.max)), Busy: busy, Extra: r.extra,
	}
	if r.secs > 0 {
		j.QPS = round3(float64(r.ops) / r.secs)
		j.Gbps = round3(float64(r.ops) * float64(r.p.size+r.p.resp) * 8 / r.secs / 1e9)
		if scenario == "bandwidth" {
			j.GBps = round3(float64(r.ops) * float64(r.p.size) / r.secs / 1e9)
		}
	}
	if r.inlight > 0 && r.inlight != r.p.conc {
		j.Inflight = r.inlight
	}
	switch {
	case r.err != nil:
		j.Error = r.err.Error()
		j.AllocsPerOp = -1
	case r.firstErr != nil:
		j.Error = r.firstErr.Error()
	}
	if r.ops == 0 {
		j.AllocsPerOp = -1
	}
	return j
}

func round3(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	if math.Abs(v) >= 1000 {
		return math.Round(v*10) / 10
	}
	return math.Round(v*1000) / 1000
}

// outSettings is the part of the command line the output reads; config
// embeds it, so the output sees what the scenario sets.
type outSettings struct {
	scenario  string
	dur       time.Duration
	warmup    time.Duration
	systems   []string // erpc first, then -vs
	transport string
	json      bool
	busy      bool
	progress  bool
}

// output writes results as they come: JSON lines, or table rows once every
// system has measured the row's point; and a progress bar on a terminal.
type output struct {
	cfg     *outSettings
	w, ew   io.Writer
	cores   string
	results []jsonRecord

	row       []jsonRecord
	headerOut bool
	total     int
	done      int
	barOn     bool
	started   time.Time
}

func newOutput(cfg *outSettings, w, ew io.Writer) *output {
	return &output{cfg: cfg, w: w, ew: ew, started: time.Now()}
}

func (o *output) warn(format string, args ...any) {
	o.clearBar()
	fmt.Fprintf(o.ew, "erpc-bench: "+format+"\n", args...)
}

// expect adds n points to the progress bar's total.
func (o *output) expect(n int) { o.total += n }

func (o *output) progressStart(system string, p point) {
	if !o.cfg.progress || o.total == 0 {
		return
	}
	const width = 30
	fill := o.done * width / o.total
	fmt.Fprintf(o.ew, "\r\033[K[%s%s] %d/%d %s %s c=%d %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		o.done, o.total, system, humanSize(p.size), p.conc, time.Since(o.started).Round(time.Second))
	o.barOn = true
}

func (o *output) clearBar() {
	if o.barOn {
		fmt.Fprint(o.ew, "\r\033[K")
		o.barOn = false
	}
}

// add reports one result.
func (o *output) add(r result) {
	o.done++
	j := record(o.cfg.scenario, o.cores, o.cfg.busy, r)
	o.results = append(o.results, j)
	if o.cfg.json {
		b, _ := json.Marshal(j)
		fmt.Fprintf(o.w, "%s\n", b)
		return
	}
	if len(o.row) > 0 && !sameRow(o.row[0], j) {
		o.flushRow()
	}
	o.row = append(o.row, j)
	if len(o.row) == len(o.cfg.systems) {
		o.flushRow()
	}
}

func sameRow(a, b jsonRecord) bool {
	return a.Size == b.Size && a.Concurrency == b.Concurrency && a.Sessions == b.Sessions &&
		fmt.Sprint(a.Extra["loss"]) == fmt.Sprint(b.Extra["loss"])
}

func (o *output) finish() {
	if len(o.row) > 0 {
		o.flushRow()
	}
	o.clearBar()
}

// The table follows coro_rpc's benchmark tables: the point's size and
// concurrency, then per system Gb/s, P50, P90, P99 and QPS.
const colW = 9

func (o *output) header() {
	cfg := o.cfg
	mode := "netpoller"
	if cfg.busy {
		mode = "busy-poll"
	}
	fmt.Fprintf(o.w, "# %s: erpc over %s, %s, %v per point after %v warm-up, cores %s\n",
		cfg.scenario, cfg.transport, mode, cfg.dur, cfg.warmup, o.cores)
	var g, h, sep strings.Builder
	g.WriteString("|          |      |")
	h.WriteString("|     size | conc |")
	sep.WriteString("|----------|------|")
	switch cfg.scenario {
	case "sessions":
		g.WriteString("          |")
		h.WriteString(" sessions |")
		sep.WriteString("----------|")
	case "loss":
		g.WriteString("          |")
		h.WriteString("     loss |")
		sep.WriteString("----------|")
	}
	cols := o.columns()
	for _, s := range cfg.systems {
		// The system's name over its column group.
		gw := len(cols)*(colW+3) - 1
		fmt.Fprintf(&g, " %-*s|", gw-1, trimTo(s, gw-1))
		headerCells(&h, &sep, cols, colW)
	}
	fmt.Fprintln(o.w, g.String())
	fmt.Fprintln(o.w, h.String())
	fmt.Fprintln(o.w, sep.String())
}

func (o *output) columns() []string {
	c := []string{"Gb/s", "P50", "P90", "P99", "QPS"}
	switch o.cfg.scenario {
	case "loss":
		c = append(c, "rel", "errors")
	case "sessions":
		c = append(c, "rel", "B/sess")
	case "bandwidth":
		c = append(c, "GB/s")
	}
	return c
}

func trimTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (o *output) flushRow() {
	if !o.headerOut {
		o.clearBar()
		o.header()
		o.headerOut = true
	}
	o.clearBar()
	first := o.row[0]
	var b strings.Builder
	fmt.Fprintf(&b, "| %8s | %4d |", humanSize(first.Size), first.Concurrency)
	switch o.cfg.scenario {
	case "sessions":
		fmt.Fprintf(&b, " %8d |", first.Sessions)
	case "loss":
		fmt.Fprintf(&b, " %8s |", fmt.Sprint(first.Extra["loss"]))
	}
	bySys := map[string]jsonRecord{}
	for _, j := range o.row {
		bySys[j.System] = j
	}
	for _, s := range o.cfg.systems {
		j, ok := bySys[s]
		for _, c := range o.columns() {
			v := "-"
			if ok {
				v = cell(j, c)
			}
			fmt.Fprintf(&b, " %*s |", colW, v)
		}
	}
	fmt.Fprintln(o.w, b.String())
	for _, j := range o.row {
		if j.Ops == 0 && j.Error == "" {
			j.Error = fmt.Sprintf("no call completed in the %v measured window (calls slower than -d? raise it)", o.cfg.dur)
		}
		if j.Error != "" || j.Errors > 0 {
			fmt.Fprintf(o.w, "#   %s %s c=%d: %d errors; %s\n", j.System, humanSize(j.Size), j.Concurrency, j.Errors, j.Error)
		}
		if j.Inflight > 0 {
			fmt.Fprintf(o.w, "#   %s %s c=%d: %d in flight (capped: no flow control)\n", j.System, humanSize(j.Size), j.Concurrency, j.Inflight)
		}
	}
	o.row = o.row[:0]
}

func cell(j jsonRecord, col string) string {
	if j.Ops == 0 && col != "errors" {
		return "n/a"
	}
	switch col {
	case "Gb/s":
		return fmt.Sprintf("%.3f", j.Gbps)
	case "P50":
		return humanUs(j.P50)
	case "P90":
		return humanUs(j.P90)
	case "P99":
		return humanUs(j.P99)
	case "QPS":
		return humanCount(j.QPS)
	case "rel":
		for _, k := range []string{"rel_lossless", "rel_1session"} {
			if v, ok := j.Extra[k].(float64); ok {
				return fmt.Sprintf("%.3f", v)
			}
		}
		return "-"
	case "GB/s":
		return fmt.Sprintf("%.2f", j.GBps)
	case "errors":
		return fmt.Sprint(j.Errors)
	case "B/sess":
		if v, ok := j.Extra["mem_per_session_bytes"].(float64); ok {
			return fmt.Sprintf("%.0f", v)
		}
		return "-"
	}
	return "?"
}

func humanUs(us float64) string {
	switch {
	case us >= 10000:
		return fmt.Sprintf("%.1fms", us/1000)
	case us >= 1000:
		return fmt.Sprintf("%.2fms", us/1000)
	case us >= 100:
		return fmt.Sprintf("%.0fus", us)
	}
	return fmt.Sprintf("%.1fus", us)
}

func humanCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fK", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func humanSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// sessionsOf is how many sessions (connections, streams) a system used for
// a point: erpc's spread the point's calls over p.sessions; the others
// run one stream or connection whatever -sessions says.
func sessionsOf(system string, sessions int) int {
	if strings.HasPrefix(system, "erpc") {
		return max(sessions, 1)
	}
	return 1
}

// headerCells appends a table's column names, w wide and right-aligned, to
// its header row h and their rule to sep.
func headerCells(h, sep *strings.Builder, cols []string, w int) {
	for _, c := range cols {
		fmt.Fprintf(h, " %*s |", w, c)
		sep.WriteString(strings.Repeat("-", w+2) + "|")
	}
}

// sloProgress draws the progress bar on a terminal.
func (o *output) sloProgress(what string) {
	if !o.cfg.progress || o.total == 0 {
		return
	}
	const width = 30
	fill := o.done * width / o.total
	fmt.Fprintf(o.ew, "\r\033[K[%s%s] %d/%d %s %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		o.done, o.total, what, time.Since(o.started).Round(time.Second))
	o.barOn = true
}
