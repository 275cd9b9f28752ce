package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"sort"
	"testing"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
)

// contractFields are the JSON names BENCH-CONTRACT.md fixes.
var contractFields = []string{"scenario", "system", "transport", "size", "resp_size", "concurrency",
	"sessions", "duration_s", "ops", "errors", "qps", "gbps", "p50_us", "p90_us", "p99_us", "p999_us",
	"allocs_per_op", "cores"}

func sampleResult() meter.Result {
	r := meter.Result{P: meter.Point{Size: 32, Resp: 32, Conc: 1, Sessions: 1}, System: "erpc", Tr: "udp",
		Ops: 1000, Secs: 2, Allocs: 0}
	for i := range 1000 {
		r.H.Record(time.Duration(20+i%10) * time.Microsecond)
	}
	r.Extra = map[string]any{"rel_lossless": 0.5}
	return r
}

func TestJSONFields(t *testing.T) {
	b, err := json.Marshal(recordOf("latency", "server=0 client=1", false, sampleResult()))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	for _, f := range contractFields {
		if _, ok := m[f]; !ok {
			t.Errorf("field %q missing from %s", f, b)
		}
	}
	if m["rel_lossless"] != 0.5 {
		t.Errorf("extra field lost: %s", b)
	}
	if m["qps"] != 500.0 || m["gbps"] != 0.0 || m["ops"] != 1000.0 {
		t.Errorf("qps/gbps/ops wrong: %s", b)
	}
	if p50 := m["p50_us"].(float64); p50 < 23.7 || p50 > 24.3 {
		t.Errorf("p50_us = %v, want ~24", p50)
	}
	// A failed point has no NaN (invalid JSON) and says why.
	fr := meter.Result{P: meter.Point{Size: 32, Resp: 32, Conc: 1}, System: "grpc", Err: errors.New("boom")}
	b, err = json.Marshal(recordOf("rate", "unpinned", false, fr))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil || m["error"] != "boom" || m["allocs_per_op"] != -1.0 {
		t.Errorf("failed point: %s (%v)", b, err)
	}
}

// TestSVGIsXML parses the plot with encoding/xml.
func TestSVGIsXML(t *testing.T) {
	var recs []Record
	for _, sys := range []string{"erpc", "raw-udp", "a<b&c"} {
		for _, size := range []int{128, 4096, 1 << 20} {
			for _, c := range []int{1, 16} {
				r := sampleResult()
				r.System, r.P.Size, r.P.Resp, r.P.Conc = sys, size, size, c
				recs = append(recs, recordOf("table", "x", false, r))
			}
		}
	}
	for _, in := range [][]Record{recs, recs[:1], nil} {
		svg := GridPlotSVG("table", in)
		d := xml.NewDecoder(bytes.NewReader(svg))
		var names []string
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("invalid XML: %v\n%s", err, svg)
			}
			if se, ok := tok.(xml.StartElement); ok {
				names = append(names, se.Name.Local)
			}
		}
		if len(names) == 0 || names[0] != "svg" {
			t.Fatalf("root element %v", names)
		}
		if len(in) > 1 {
			sort.Strings(names)
			if i := sort.SearchStrings(names, "polyline"); i == len(names) || names[i] != "polyline" {
				t.Fatal("no lines drawn")
			}
		}
	}
}
