package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"strings"
	"testing"
)

// smokeSLO runs the scenario end to end, briefly: servers in their own
// processes, UDP and TCP loopback, both workloads; the JSON rows carry the
// contract's fields and the scenario's.
func smokeSLO(t *testing.T) {
	skipShort(t)
	recs := runJSON(t, "slo", "-load", "0.2,0.5", "-policy", "jbsq,hash", "-vs", "grpc", "-workers", "2", "-retries", "1",
		"-endpoints", "2", "-sessions", "2", "-drain", "2s")
	checkSLORows(t, recs, []string{"jbsq", "hash", "grpc"}, 2)
	for _, r := range recs {
		if r["kind"] == "point" && r["ops"].(float64) <= 0 {
			t.Errorf("no call answered: %v", r)
		}
	}
}

func smokeSLOKV(t *testing.T) {
	skipShort(t)
	recs := runJSON(t, "slo", "-workload", "kv", "-qps", "1K", "-mix", "50", "-policy", "inline,jbsq", "-vs", "grpc",
		"-server-procs", "1", "-keys", "1000", "-endpoints", "2", "-sessions", "2", "-keydist", "zipf")
	checkSLORows(t, recs, []string{"inline", "jbsq", "grpc"}, 1)
	for _, r := range recs {
		if r["kind"] == "point" && (r["ops"].(float64) <= 0 || r["errors"].(float64) != 0) {
			t.Errorf("bad kv point: %v", r)
		}
	}
}

// checkSLORows checks the scenario's JSON: per policy, one row per load
// point and one summary, with their fields.
func checkSLORows(t *testing.T, recs []map[string]any, policies []string, points int) {
	t.Helper()
	pointFields := []string{"policy", "dist", "workers", "offered_qps", "qps", "p99_us", "nack_frac", "valid",
		"p50_us", "p999_us", "lag_p99_us", "iat_ad", "attempts"}
	sumFields := []string{"policy", "dist", "workers", "max_qps_under_slo"}
	n := map[string]int{}
	sums := map[string]int{}
	for _, r := range recs {
		if r["scenario"] != "slo" {
			t.Errorf("scenario %v", r["scenario"])
		}
		pol, _ := r["policy"].(string)
		switch r["kind"] {
		case "point":
			n[pol]++
			for _, f := range pointFields {
				if _, ok := r[f]; !ok {
					t.Errorf("point without %q: %v", f, r)
				}
			}
			if r["offered_qps"].(float64) <= 0 {
				t.Errorf("offered %v", r["offered_qps"])
			}
		case "summary":
			sums[pol]++
			for _, f := range sumFields {
				if _, ok := r[f]; !ok {
					t.Errorf("summary without %q: %v", f, r)
				}
			}
			if r["workload"] == "sleep" {
				if _, ok := r["max_load_under_slo"]; !ok {
					t.Errorf("summary without max_load_under_slo: %v", r)
				}
			}
		default:
			t.Errorf("row of kind %v", r["kind"])
		}
	}
	for _, p := range policies {
		if n[p] != points || sums[p] != 1 {
			t.Errorf("%s: %d points and %d summaries, want %d and 1", p, n[p], sums[p], points)
		}
	}
}

// TestSLOTableAndPlot: the human output has the table's header and
// result lines, and the plot is well-formed SVG with the SLO line.
func TestSLOTableAndPlot(t *testing.T) {
	skipShort(t)
	var out bytes.Buffer
	plot := t.TempDir() + "/slo.svg"
	err := run([]string{"slo", "-load", "0.3", "-policy", "jbsq", "-vs", "none", "-workers", "2", "-endpoints", "1",
		"-sessions", "2", "-d", "200ms", "-warmup", "50ms", "-pin=false", "-plot", plot}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"# slo: dist bimodal1", "erpc jbsq", "|  load |  offered |", "# max throughput with p99 <= 10ms"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	svg := readFile(t, plot)
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Errorf("plot is not XML: %v", err)
	}
	if !bytes.Contains(svg, []byte("SLO 10")) || !bytes.Contains(svg, []byte("polyline")) {
		t.Errorf("plot lacks the SLO line or a series")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
