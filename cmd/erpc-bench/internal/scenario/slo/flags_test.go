package slo

import (
	"bytes"
	"encoding/xml"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
)

// TestSLOPlotInf: infinite and invalid points are drawn, not dropped.
func TestSLOPlotInf(t *testing.T) {
	mk := func(pol string, load, p99 float64, valid bool) report.Record {
		return report.Record{P99: p99, Extra: map[string]any{"kind": "point", "policy": pol, "dist": "exp",
			"server_procs": 1, "load": load, "valid": valid, "slo_us": 10000.0, "offered_qps": load * 4000}}
	}
	svg := PlotSVG([]report.Record{mk("jbsq", 0.5, 2000, true), mk("jbsq", 0.9, sloInf, true), mk("hash", 0.5, 9000, false),
		{Extra: map[string]any{"kind": "summary"}}})
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte(`fill="white" stroke=`)) || !bytes.Contains(svg, []byte("<path")) {
		t.Errorf("invalid or infinite point not drawn:\n%s", svg)
	}
	if n := bytes.Count(svg, []byte("<polyline")); n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
}

func TestParseSLOFlags(t *testing.T) {
	c, err := ParseFlags([]string{"-dist", "exp,bimodal2", "-policy", "hash", "-vs", "none", "-load", "0.5,1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sc := c.Ext.(*sloConfig)
	if !slices.Equal(sc.dists, []string{"exp", "bimodal2"}) || !slices.Equal(c.Systems, []string{"hash"}) ||
		sc.slo != 10*time.Millisecond || !slices.Equal(sc.offered(), []float64{2000, 4000}) {
		t.Errorf("%+v %v %v", sc, c.Systems, sc.offered())
	}
	k, err := ParseFlags([]string{"-workload", "kv", "-mix", "0,50,95"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if ks := k.Ext.(*sloConfig); !slices.Equal(ks.mixes, []int{0, 50, 95}) || !slices.Equal(ks.procs, []int{1, 2}) ||
		ks.slo != sloKVSLO || len(ks.qps) == 0 || !slices.Equal(k.Systems, []string{"inline", "grpc"}) {
		t.Errorf("kv defaults: %+v %v", ks, k.Systems)
	}
	for _, bad := range [][]string{
		{"slo", "-dist", "pareto"},
		{"slo", "-policy", "inline"}, // inline needs the kv workload
		{"slo", "-vs", "drpc"},
		{"slo", "-workload", "kv", "-mix", "101"},
		{"slo", "-qps", "fast"},
	} {
		if _, err := ParseFlags(bad[1:], io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
