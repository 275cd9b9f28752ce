package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"sort"
)

// The plot is hand-written SVG, so the command needs no plotting library:
// two panels, p50 latency by size (at the lowest concurrency measured)
// and throughput by size (the best over concurrencies), log-log, one line
// per system.

// series is one system's line in a panel.
type series struct {
	name string
	xs   []float64
	ys   []float64
}

var PlotColors = []string{"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// plotSeries extracts, per system, y(size): pick chooses which of a size's
// records gives the y value.
func plotSeries(recs []Record, y func(Record) float64, better func(a, b Record) bool) []series {
	type key struct {
		sys  string
		size int
	}
	best := map[key]Record{}
	var order []string
	for _, r := range recs {
		if r.Ops == 0 {
			continue
		}
		k := key{r.System, r.Size}
		if _, ok := best[k]; !ok {
			if !slices.Contains(order, r.System) {
				order = append(order, r.System)
			}
			best[k] = r
		} else if better(r, best[k]) {
			best[k] = r
		}
	}
	var out []series
	for _, sys := range order {
		s := series{name: sys}
		var sizes []int
		for k := range best {
			if k.sys == sys {
				sizes = append(sizes, k.size)
			}
		}
		sort.Ints(sizes)
		for _, sz := range sizes {
			v := y(best[key{sys, sz}])
			if v > 0 {
				s.xs = append(s.xs, float64(sz))
				s.ys = append(s.ys, v)
			}
		}
		if len(s.xs) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// GridPlotSVG is the plot of the grid scenarios.
func GridPlotSVG(scenario string, recs []Record) []byte {
	lat := plotSeries(recs, func(r Record) float64 { return r.P50 },
		func(a, b Record) bool { return a.Concurrency < b.Concurrency })
	thr := plotSeries(recs, func(r Record) float64 { return r.Gbps },
		func(a, b Record) bool { return a.Gbps > b.Gbps })
	var b bytes.Buffer
	const w, h = 1000, 440
	SVGStart(&b, w, h)
	SVGText(&b, w/2, 20, "middle", 15, "erpc-bench "+scenario)
	names := map[string]bool{}
	var legend []string
	for _, ss := range [][]series{lat, thr} {
		for _, s := range ss {
			if !names[s.name] {
				names[s.name] = true
				legend = append(legend, s.name)
			}
		}
	}
	panel(&b, 70, 50, 380, 320, "p50 latency (µs) by size, lowest concurrency", lat, legend)
	panel(&b, 570, 50, 380, 320, "throughput (Gb/s) by size, best concurrency", thr, legend)
	for i, n := range legend {
		x := 70 + i*120
		fmt.Fprintf(&b, `<line x1="%d" y1="420" x2="%d" y2="420" stroke="%s" stroke-width="3"/>`+"\n", x, x+20, ColorOf(n, legend))
		SVGText(&b, x+25, 424, "start", 12, n)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// ColorOf is name's color: its place in legend.
func ColorOf(name string, legend []string) string {
	for i, n := range legend {
		if n == name {
			return PlotColors[i%len(PlotColors)]
		}
	}
	return "black"
}

// SVGStart opens a w x h SVG document on a white background.
func SVGStart(b *bytes.Buffer, w, h int) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
}

// SVGText writes s, escaped, at (x, y).
func SVGText(b *bytes.Buffer, x, y int, anchor string, size int, s string) {
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="%s" font-size="%d">`, x, y, anchor, size)
	xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

// LogRange returns decade bounds covering vs.
func LogRange(vs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if math.IsInf(lo, 0) {
		return 0, 1
	}
	lo, hi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

func panel(b *bytes.Buffer, x0, y0, pw, ph int, title string, ss []series, legend []string) {
	SVGText(b, x0+pw/2, y0-10, "middle", 13, title)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n", x0, y0, pw, ph)
	var xs, ys []float64
	for _, s := range ss {
		xs = append(xs, s.xs...)
		ys = append(ys, s.ys...)
	}
	if len(xs) == 0 {
		SVGText(b, x0+pw/2, y0+ph/2, "middle", 12, "no data")
		return
	}
	// x: log2 of size, padded half a step; y: decades.
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, v := range xs {
		xlo, xhi = math.Min(xlo, math.Log2(v)), math.Max(xhi, math.Log2(v))
	}
	xlo, xhi = xlo-0.5, xhi+0.5
	ylo, yhi := LogRange(ys)
	px := func(v float64) float64 { return float64(x0) + (math.Log2(v)-xlo)/(xhi-xlo)*float64(pw) }
	py := func(v float64) float64 { return float64(y0+ph) - (math.Log10(v)-ylo)/(yhi-ylo)*float64(ph) }
	// Ticks: every size measured on x, every decade on y.
	seen := map[float64]bool{}
	for _, v := range xs {
		if seen[v] {
			continue
		}
		seen[v] = true
		x := int(px(v))
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ddd"/>`+"\n", x, y0, x, y0+ph)
		SVGText(b, x, y0+ph+16, "middle", 11, HumanSize(int(v)))
	}
	for d := ylo; d <= yhi; d++ {
		y := int(py(math.Pow(10, d)))
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ddd"/>`+"\n", x0, y, x0+pw, y)
		SVGText(b, x0-6, y+4, "end", 11, fmt.Sprintf("%g", math.Pow(10, d)))
	}
	for _, s := range ss {
		col := ColorOf(s.name, legend)
		var pts bytes.Buffer
		for k := range s.xs {
			fmt.Fprintf(&pts, "%.1f,%.1f ", px(s.xs[k]), py(s.ys[k]))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(s.xs[k]), py(s.ys[k]), col)
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", bytes.TrimSpace(pts.Bytes()), col)
	}
}
