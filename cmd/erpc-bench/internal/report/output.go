package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
)

// Record is one line of -json output. The fields up to Cores are the
// benchmark contract's and must keep their names; the rest are extras.
type Record struct {
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
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
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

// recordOf turns a result into its JSON form.
func recordOf(scenario, cores string, busy bool, r meter.Result) Record {
	us := func(ns float64) float64 {
		if math.IsNaN(ns) {
			return 0
		}
		return Round3(ns / 1e3)
	}
	j := Record{
		Scenario: scenario, System: r.System, Transport: r.Tr,
		Size: r.P.Size, RespSize: r.P.Resp, Concurrency: r.P.Conc, Sessions: sessionsOf(r.System, r.P.Sessions),
		DurationS: Round3(r.Secs), Ops: r.Ops, Errors: r.Errs,
		P50: us(r.H.Quantile(0.50)), P90: us(r.H.Quantile(0.90)),
		P99: us(r.H.Quantile(0.99)), P999: us(r.H.Quantile(0.999)),
		AllocsPerOp: Round3(r.Allocs), Cores: cores,
		MeanUs: us(r.H.Mean()), MaxUs: us(float64(r.H.Max)), Busy: busy, Extra: r.Extra,
	}
	if r.Secs > 0 {
		j.QPS = Round3(float64(r.Ops) / r.Secs)
		j.Gbps = Round3(float64(r.Ops) * float64(r.P.Size+r.P.Resp) * 8 / r.Secs / 1e9)
		if scenario == "bandwidth" {
			j.GBps = Round3(float64(r.Ops) * float64(r.P.Size) / r.Secs / 1e9)
		}
	}
	if r.Inlight > 0 && r.Inlight != r.P.Conc {
		j.Inflight = r.Inlight
	}
	switch {
	case r.Err != nil:
		j.Error = r.Err.Error()
		j.AllocsPerOp = -1
	case r.FirstErr != nil:
		j.Error = r.FirstErr.Error()
	}
	if r.Ops == 0 {
		j.AllocsPerOp = -1
	}
	return j
}

// Round3 rounds v to 3 decimals (1 above 1000); NaN and infinities are 0.
func Round3(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	if math.Abs(v) >= 1000 {
		return math.Round(v*10) / 10
	}
	return math.Round(v*1000) / 1000
}

// Settings is the part of the command line the output reads; config
// embeds it, so the output sees what the scenario sets.
type Settings struct {
	Scenario  string
	Dur       time.Duration
	Warmup    time.Duration
	Systems   []string // erpc first, then -vs
	Transport string
	JSON      bool
	Busy      bool
	Progress  bool
}

// Output writes results as they come: JSON lines, or table rows once every
// system has measured the row's point; and a progress bar on a terminal.
type Output struct {
	Cfg     *Settings
	W, Ew   io.Writer
	Cores   string
	Results []Record

	row       []Record
	headerOut bool
	total     int
	Done      int
	barOn     bool
	started   time.Time
}

// NewOutput writes to w, warnings and the progress bar to ew.
func NewOutput(cfg *Settings, w, ew io.Writer) *Output {
	return &Output{Cfg: cfg, W: w, Ew: ew, started: time.Now()}
}

// Warn prints a warning on the error stream.
func (o *Output) Warn(format string, args ...any) {
	o.ClearBar()
	fmt.Fprintf(o.Ew, "erpc-bench: "+format+"\n", args...)
}

// Expect adds n points to the progress bar's total.
func (o *Output) Expect(n int) { o.total += n }

// ProgressStart draws the progress bar for a point about to be measured.
func (o *Output) ProgressStart(system string, p meter.Point) {
	if !o.Cfg.Progress || o.total == 0 {
		return
	}
	const width = 30
	fill := o.Done * width / o.total
	fmt.Fprintf(o.Ew, "\r\033[K[%s%s] %d/%d %s %s c=%d %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		o.Done, o.total, system, HumanSize(p.Size), p.Conc, time.Since(o.started).Round(time.Second))
	o.barOn = true
}

// ClearBar erases the progress bar.
func (o *Output) ClearBar() {
	if o.barOn {
		fmt.Fprint(o.Ew, "\r\033[K")
		o.barOn = false
	}
}

// Add reports one result.
func (o *Output) Add(r meter.Result) {
	o.Done++
	j := recordOf(o.Cfg.Scenario, o.Cores, o.Cfg.Busy, r)
	o.Results = append(o.Results, j)
	if o.Cfg.JSON {
		b, _ := json.Marshal(j)
		fmt.Fprintf(o.W, "%s\n", b)
		return
	}
	if len(o.row) > 0 && !sameRow(o.row[0], j) {
		o.flushRow()
	}
	o.row = append(o.row, j)
	if len(o.row) == len(o.Cfg.Systems) {
		o.flushRow()
	}
}

func sameRow(a, b Record) bool {
	return a.Size == b.Size && a.Concurrency == b.Concurrency && a.Sessions == b.Sessions &&
		fmt.Sprint(a.Extra["loss"]) == fmt.Sprint(b.Extra["loss"])
}

// Finish prints the last table row and erases the progress bar.
func (o *Output) Finish() {
	if len(o.row) > 0 {
		o.flushRow()
	}
	o.ClearBar()
}

// The table follows coro_rpc's benchmark tables: the point's size and
// concurrency, then per system Gb/s, P50, P90, P99 and QPS.
const ColW = 9

func (o *Output) header() {
	cfg := o.Cfg
	mode := "netpoller"
	if cfg.Busy {
		mode = "busy-poll"
	}
	fmt.Fprintf(o.W, "# %s: erpc over %s, %s, %v per point after %v warm-up, cores %s\n",
		cfg.Scenario, cfg.Transport, mode, cfg.Dur, cfg.Warmup, o.Cores)
	var g, h, sep strings.Builder
	g.WriteString("|          |      |")
	h.WriteString("|     size | conc |")
	sep.WriteString("|----------|------|")
	switch cfg.Scenario {
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
	for _, s := range cfg.Systems {
		// The system's name over its column group.
		gw := len(cols)*(ColW+3) - 1
		fmt.Fprintf(&g, " %-*s|", gw-1, TrimTo(s, gw-1))
		HeaderCells(&h, &sep, cols, ColW)
	}
	fmt.Fprintln(o.W, g.String())
	fmt.Fprintln(o.W, h.String())
	fmt.Fprintln(o.W, sep.String())
}

func (o *Output) columns() []string {
	c := []string{"Gb/s", "P50", "P90", "P99", "QPS"}
	switch o.Cfg.Scenario {
	case "loss":
		c = append(c, "rel", "errors")
	case "sessions":
		c = append(c, "rel", "B/sess")
	case "bandwidth":
		c = append(c, "GB/s")
	}
	return c
}

// TrimTo cuts s to at most n bytes.
func TrimTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (o *Output) flushRow() {
	if !o.headerOut {
		o.ClearBar()
		o.header()
		o.headerOut = true
	}
	o.ClearBar()
	first := o.row[0]
	var b strings.Builder
	fmt.Fprintf(&b, "| %8s | %4d |", HumanSize(first.Size), first.Concurrency)
	switch o.Cfg.Scenario {
	case "sessions":
		fmt.Fprintf(&b, " %8d |", first.Sessions)
	case "loss":
		fmt.Fprintf(&b, " %8s |", fmt.Sprint(first.Extra["loss"]))
	}
	bySys := map[string]Record{}
	for _, j := range o.row {
		bySys[j.System] = j
	}
	for _, s := range o.Cfg.Systems {
		j, ok := bySys[s]
		for _, c := range o.columns() {
			v := "-"
			if ok {
				v = cell(j, c)
			}
			fmt.Fprintf(&b, " %*s |", ColW, v)
		}
	}
	fmt.Fprintln(o.W, b.String())
	for _, j := range o.row {
		if j.Ops == 0 && j.Error == "" {
			j.Error = fmt.Sprintf("no call completed in the %v measured window (calls slower than -d? raise it)", o.Cfg.Dur)
		}
		if j.Error != "" || j.Errors > 0 {
			fmt.Fprintf(o.W, "#   %s %s c=%d: %d errors; %s\n", j.System, HumanSize(j.Size), j.Concurrency, j.Errors, j.Error)
		}
		if j.Inflight > 0 {
			fmt.Fprintf(o.W, "#   %s %s c=%d: %d in flight (capped: no flow control)\n", j.System, HumanSize(j.Size), j.Concurrency, j.Inflight)
		}
	}
	o.row = o.row[:0]
}

func cell(j Record, col string) string {
	if j.Ops == 0 && col != "errors" {
		return "n/a"
	}
	switch col {
	case "Gb/s":
		return fmt.Sprintf("%.3f", j.Gbps)
	case "P50":
		return HumanUs(j.P50)
	case "P90":
		return HumanUs(j.P90)
	case "P99":
		return HumanUs(j.P99)
	case "QPS":
		return HumanCount(j.QPS)
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

// HumanUs formats microseconds for a table cell.
func HumanUs(us float64) string {
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

// HumanCount formats a count or a rate for a table cell.
func HumanCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fK", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// HumanSize formats a byte count as B, KiB or MiB.
func HumanSize(n int) string {
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

// HeaderCells appends a table's column names, w wide and right-aligned, to
// its header row h and their rule to sep.
func HeaderCells(h, sep *strings.Builder, cols []string, w int) {
	for _, c := range cols {
		fmt.Fprintf(h, " %*s |", w, c)
		sep.WriteString(strings.Repeat("-", w+2) + "|")
	}
}

// SloProgress draws the progress bar on a terminal.
func (o *Output) SloProgress(what string) {
	if !o.Cfg.Progress || o.total == 0 {
		return
	}
	const width = 30
	fill := o.Done * width / o.total
	fmt.Fprintf(o.Ew, "\r\033[K[%s%s] %d/%d %s %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		o.Done, o.total, what, time.Since(o.started).Round(time.Second))
	o.barOn = true
}
