package slo

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
)

// PlotSVG draws the slo scenario: one panel per sweep (distribution or
// kv mix, and server cores), p99 (log scale) against offered load (sleep:
// as a fraction of workers/S; kv: requests per second), a line per policy
// or peer, the SLO as a dashed horizontal line. A point whose p99 is
// infinite (NACKs and failures past the 1% tail) sits on the panel's top
// edge, marked with a cross; an invalid point (the generator did not keep
// up) is a hollow circle.
func PlotSVG(recs []report.Record) []byte {
	type panelKey struct {
		dist  string
		procs int
	}
	type pt struct {
		x, y    float64
		inf     bool
		invalid bool
	}
	byPanel := map[panelKey]map[string][]pt{}
	var panels []panelKey
	var legend []string
	slo := map[panelKey]float64{}
	kvw := false
	for _, r := range recs {
		e := r.Extra
		if e["kind"] != "point" {
			continue
		}
		k := panelKey{fmt.Sprint(e["dist"]), toInt(e["server_procs"])}
		if byPanel[k] == nil {
			byPanel[k] = map[string][]pt{}
			panels = append(panels, k)
		}
		name := fmt.Sprint(e["policy"])
		if !slices.Contains(legend, name) {
			legend = append(legend, name)
		}
		x, ok := e["load"].(float64)
		if !ok {
			x = e["offered_qps"].(float64)
			kvw = true
		}
		p := pt{x: x, y: r.P99, inf: r.P99 >= sloInf, invalid: e["valid"] != true}
		byPanel[k][name] = append(byPanel[k][name], p)
		slo[k], _ = e["slo_us"].(float64)
	}
	cols := min(len(panels), 2)
	rows := (len(panels) + 1) / 2
	const pw, ph = 400, 300
	w := max(cols, 1)*(pw+110) + 40
	h := max(rows, 1)*(ph+90) + 80
	var b bytes.Buffer
	report.SVGStart(&b, w, h)
	report.SVGText(&b, w/2, 22, "middle", 15, "erpc-bench slo: p99 by offered load")
	if len(panels) == 0 {
		report.SVGText(&b, w/2, h/2, "middle", 12, "no data")
	}
	for i, k := range panels {
		x0 := 80 + (i%2)*(pw+110)
		y0 := 60 + (i/2)*(ph+90)
		title := k.dist
		if k.procs > 0 {
			title += fmt.Sprintf(", server GOMAXPROCS %d", k.procs)
		}
		report.SVGText(&b, x0+pw/2, y0-10, "middle", 13, title)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n", x0, y0, pw, ph)
		var xs, ys []float64
		for _, s := range byPanel[k] {
			for _, p := range s {
				xs = append(xs, p.x)
				if !p.inf {
					ys = append(ys, p.y)
				}
			}
		}
		if v := slo[k]; v > 0 {
			ys = append(ys, v)
		}
		xhi := 0.0
		for _, v := range xs {
			xhi = math.Max(xhi, v)
		}
		if xhi <= 0 {
			xhi = 1
		}
		ylo, yhi := report.LogRange(ys)
		px := func(v float64) float64 { return float64(x0) + v/xhi*float64(pw) }
		py := func(v float64) float64 {
			if v >= sloInf {
				return float64(y0)
			}
			return float64(y0+ph) - (math.Log10(math.Max(v, math.Pow(10, ylo)))-ylo)/(yhi-ylo)*float64(ph)
		}
		for d := ylo; d <= yhi; d++ {
			y := int(py(math.Pow(10, d)))
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ddd"/>`+"\n", x0, y, x0+pw, y)
			report.SVGText(&b, x0-6, y+4, "end", 11, report.HumanUs(math.Pow(10, d)))
		}
		for t := 0; t <= 5; t++ {
			v := xhi * float64(t) / 5
			x := int(px(v))
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#eee"/>`+"\n", x, y0, x, y0+ph)
			label := fmt.Sprintf("%.2g", v)
			if kvw {
				label = report.HumanCount(v)
			}
			report.SVGText(&b, x, y0+ph+16, "middle", 11, label)
		}
		xl := "offered load (workers / S)"
		if kvw {
			xl = "offered requests per second"
		}
		report.SVGText(&b, x0+pw/2, y0+ph+34, "middle", 11, xl)
		report.SVGText(&b, x0-55, y0+ph/2, "middle", 11, "p99")
		if v := slo[k]; v > 0 {
			y := py(v)
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#000" stroke-dasharray="6,4"/>`+"\n", x0, y, x0+pw, y)
			report.SVGText(&b, x0+pw-4, int(y)-4, "end", 11, "SLO "+report.HumanUs(v))
		}
		names := make([]string, 0, len(byPanel[k]))
		for n := range byPanel[k] {
			names = append(names, n)
		}
		sort.Slice(names, func(a, c int) bool { return indexOf(legend, names[a]) < indexOf(legend, names[c]) })
		for _, n := range names {
			s := byPanel[k][n]
			sort.Slice(s, func(a, c int) bool { return s[a].x < s[c].x })
			col := report.ColorOf(n, legend)
			var line bytes.Buffer
			for _, p := range s {
				fmt.Fprintf(&line, "%.1f,%.1f ", px(p.x), py(p.y))
				switch {
				case p.inf:
					cx, cy := px(p.x), py(p.y)
					fmt.Fprintf(&b, `<path d="M%.1f %.1fl8 8m0 -8l-8 8" stroke="%s" stroke-width="2" transform="translate(-4,-4)"/>`+"\n", cx, cy, col)
				case p.invalid:
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="white" stroke="%s"/>`+"\n", px(p.x), py(p.y), col)
				default:
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(p.x), py(p.y), col)
				}
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", bytes.TrimSpace(line.Bytes()), col)
		}
	}
	for i, n := range legend {
		x := 80 + i*130
		y := h - 20
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", x, y-4, x+20, y-4, report.ColorOf(n, legend))
		report.SVGText(&b, x+25, y, "start", 12, n)
	}
	report.SVGText(&b, w-20, h-20, "end", 11, "x on the top edge: p99 infinite (NACKs); hollow: invalid point")
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return len(list)
}

// toInt reads a number from a decoded or freshly built Extra map.
func toInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case float64:
		return int(x)
	}
	return 0
}
