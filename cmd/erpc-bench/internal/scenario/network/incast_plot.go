//go:build linux

package network

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
)

// IncastPlotSVG draws, for each incast row that carries a trace (-plot),
// every sender's throughput over the row's last incast in 10 ms windows,
// as the receiver counted it: a panel per row, systems across, numbers of
// senders down, one thin line per sender and the fair share dashed.
func IncastPlotSVG(recs []report.Record) []byte {
	type cell struct {
		r  report.Record
		tr *incastTrace
	}
	var systems []string
	var senders []int
	cells := map[[2]any]cell{}
	for _, r := range recs {
		tr, ok := r.Extra["trace"].(*incastTrace)
		if !ok {
			continue
		}
		n := r.Sessions
		if !slices.Contains(systems, r.System) {
			systems = append(systems, r.System)
		}
		found := false
		for _, s := range senders {
			found = found || s == n
		}
		if !found {
			senders = append(senders, n)
		}
		cells[[2]any{r.System, n}] = cell{r, tr}
	}
	sort.Ints(senders)
	const pw, ph, mx, my, top = 380, 220, 70, 70, 50
	w := mx + len(systems)*(pw+mx)
	h := top + len(senders)*(ph+my) + 20
	var b bytes.Buffer
	report.SVGStart(&b, w, h)
	report.SVGText(&b, w/2, 22, "middle", 15, "erpc-bench incast: per-sender throughput (Mbit/s, 10 ms windows, as the receiver counts it) in one incast")
	if len(cells) == 0 {
		report.SVGText(&b, w/2, h/2, "middle", 13, "no traces (run with -plot)")
	}
	for ri, n := range senders {
		// One scale per row of panels, so systems compare at a glance.
		var xmax, ymax float64
		for _, s := range systems {
			c, ok := cells[[2]any{s, n}]
			if !ok {
				continue
			}
			for _, line := range c.tr.Mbps {
				xmax = math.Max(xmax, float64(len(line)*c.tr.WindowMS))
				for _, v := range line {
					ymax = math.Max(ymax, v)
				}
			}
		}
		ymax = niceCeil(ymax)
		xmax = niceCeil(xmax)
		for ci, s := range systems {
			c, ok := cells[[2]any{s, n}]
			x0, y0 := mx+ci*(pw+mx), top+ri*(ph+my)+20
			if !ok {
				continue
			}
			e := c.r.Extra
			title := fmt.Sprintf("%s, %d senders: util %.2f, Jain %.2f, p99 FCT %.2fx ideal", s, n,
				e["utilization"], e["jain"], e["fct_p99_ideal"])
			report.SVGText(&b, x0+pw/2, y0-8, "middle", 12, title)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n", x0, y0, pw, ph)
			if xmax <= 0 || ymax <= 0 {
				continue
			}
			px := func(ms float64) float64 { return float64(x0) + ms/xmax*pw }
			py := func(v float64) float64 { return float64(y0+ph) - v/ymax*ph }
			for k := 0; k <= 4; k++ {
				xv, yv := xmax*float64(k)/4, ymax*float64(k)/4
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", px(xv), y0, px(xv), y0+ph)
				fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", x0, py(yv), x0+pw, py(yv))
				report.SVGText(&b, int(px(xv)), y0+ph+15, "middle", 10, fmt.Sprintf("%g", xv))
				report.SVGText(&b, x0-5, int(py(yv))+4, "end", 10, fmt.Sprintf("%g", yv))
			}
			report.SVGText(&b, x0+pw/2, y0+ph+32, "middle", 11, "ms since the incast started")
			for i, line := range c.tr.Mbps {
				var pts bytes.Buffer
				for k, v := range line {
					fmt.Fprintf(&pts, "%.1f,%.1f ", px((float64(k)+0.5)*float64(c.tr.WindowMS)), py(v))
				}
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1" stroke-opacity="0.75"/>`+"\n",
					bytes.TrimSpace(pts.Bytes()), report.PlotColors[i%len(report.PlotColors)])
			}
			if f := c.tr.FairMbps; f > 0 && f <= ymax {
				fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black" stroke-dasharray="6,4"/>`+"\n", x0, py(f), x0+pw, py(f))
				report.SVGText(&b, x0+pw-4, int(py(f))-4, "end", 10, fmt.Sprintf("fair share %.1f", f))
			}
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
