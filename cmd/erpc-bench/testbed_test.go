//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/testbed"
)

// The testbed scenarios, each run tiny (a few senders, short windows) as
// root: the JSON rows have the contract's fields and the scenario's, with
// sane values. Performance targets are not asserted here: BENCHMARKS.md
// records full runs.

// needTestbed skips unless the scenarios can build their networks.
func needTestbed(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds network namespaces and starts server processes")
	}
	if os.Geteuid() != 0 {
		t.Skip("the testbed scenarios need root (network namespaces)")
	}
	for _, tool := range []string{"ip", "tc", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

// runNetJSON runs erpc-bench with args and returns its JSON rows; a missing
// testbed skips.
func runNetJSON(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(args, &out, &errOut)
	if errors.Is(err, testbed.ErrNoTestbed) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("%v\nstderr: %s\nstdout: %s", err, errOut.String(), out.String())
	}
	var rows []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		for _, f := range contractFields {
			if _, ok := m[f]; !ok {
				t.Errorf("field %q missing: %s", f, l)
			}
		}
		rows = append(rows, m)
	}
	return rows
}

func num(t *testing.T, m map[string]any, k string) float64 {
	t.Helper()
	v, ok := m[k].(float64)
	if !ok {
		t.Fatalf("%s: %q missing or not a number in %v", m["system"], k, m)
	}
	return v
}

func incastScenario(t *testing.T) {
	needTestbed(t)
	svg := filepath.Join(t.TempDir(), "incast.svg")
	rows := runNetJSON(t, "incast", "-senders", "3", "-size", "256K", "-reps", "2", "-warm", "1",
		"-rate", "200M", "-gap", "5ms", "-json", "-pin=false", "-plot", svg)
	seen := map[string]bool{}
	for _, m := range rows {
		sys := m["system"].(string)
		seen[sys] = true
		if m["scenario"] != "incast" || num(t, m, "senders") != 3 || num(t, m, "sessions") != 3 {
			t.Errorf("%s: wrong scenario or senders: %v", sys, m)
		}
		if u := num(t, m, "utilization"); !(u > 0 && u <= 1.05) {
			t.Errorf("%s: utilization %v", sys, u)
		}
		if j := num(t, m, "jain"); !(j > 0 && j <= 1) {
			t.Errorf("%s: jain %v", sys, j)
		}
		if r := num(t, m, "fct_p99_ideal"); !(r > 0.5 && r < 1000) {
			t.Errorf("%s: fct_p99_ideal %v", sys, r)
		}
		if f := num(t, m, "failed"); f != 0 {
			t.Errorf("%s: %v failed calls: %v", sys, f, m["error"])
		}
		if num(t, m, "ops") != 6 || num(t, m, "p99_us") <= 0 || num(t, m, "gbps") <= 0 {
			t.Errorf("%s: ops, p99 or gbps: %v", sys, m)
		}
		want := "udp"
		if sys == "grpc" {
			want = "tcp"
		}
		if m["transport"] != want {
			t.Errorf("%s over %v", sys, m["transport"])
		}
	}
	if len(rows) != 3 || !seen["erpc"] || !seen["erpc-nocc"] || !seen["grpc"] {
		t.Errorf("rows: %v", rows)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("<polyline")) || !bytes.Contains(b, []byte("erpc-nocc, 3 senders")) {
		t.Errorf("plot without traces:\n%.500s", b)
	}
}

func multipathScenario(t *testing.T) {
	needTestbed(t)
	// 1 s, not less: a 128 KiB call on these paths took up to a second
	// in some runs (issue 33: slow paths starve), and a row needs one.
	rows := runNetJSON(t, "multipath", "-size", "128K", "-d", "1s", "-warmup", "100ms", "-json", "-pin=false")
	count := map[string]int{}
	for _, m := range rows {
		sys := m["system"].(string)
		count[sys]++
		if m["scenario"] != "multipath" || num(t, m, "gbps") <= 0 || num(t, m, "p99_us") <= 0 || num(t, m, "errors") != 0 {
			t.Errorf("%s: %v", sys, m)
		}
		pg := m["path_gbps"].([]any)
		pp := m["port_paths"].([]any)
		switch sys {
		case "erpc-1path", "grpc":
			// All its bytes on its path.
			p := int(m["path"].(float64))
			if pp[0].(float64) != float64(p) || pg[p].(float64) <= 0 || pg[1-p].(float64) > pg[p].(float64)/10 {
				t.Errorf("%s on path %d: ports on %v, Gb/s per path %v", sys, p, pp, pg)
			}
		default:
			if num(t, m, "paths") != 2 || pp[0].(float64) != 0 || pp[1].(float64) != 1 {
				t.Errorf("%s: ports on paths %v", sys, pp)
			}
		}
		if num(t, m, "capacity_gbps") <= 0 {
			t.Errorf("%s: no capacity_gbps: %v", sys, m)
		}
		if sys == "erpc" && (num(t, m, "vs_1path") <= 0 || num(t, m, "vs_spray") <= 0) {
			t.Errorf("erpc row without its ratios: %v", m)
		}
	}
	if count["erpc-1path"] != 2 || count["grpc"] != 2 || count["erpc-spray"] != 1 || count["erpc"] != 1 {
		t.Errorf("rows per system: %v", count)
	}
}

func pathScenario(t *testing.T) {
	needTestbed(t)
	rows := runNetJSON(t, "path", "-rates", "50", "-size", "64K", "-sessions", "2", "-vs", "erpc-nocc,grpc",
		"-d", "1s", "-warmup", "100ms", "-json", "-pin=false")
	count := map[string]int{}
	for _, m := range rows {
		sys := m["system"].(string)
		n := int(num(t, m, "sessions"))
		count[fmt.Sprintf("%s/%d", sys, n)]++
		if m["scenario"] != "path" || num(t, m, "rate_mbit") != 50 || num(t, m, "gbps") <= 0 || num(t, m, "errors") != 0 {
			t.Errorf("%s: %v", sys, m)
		}
		// Wire bytes against the rate: above 0, and not far above 1
		// (the shaper's burst).
		if u := num(t, m, "utilization"); u <= 0 || u > 1.2 {
			t.Errorf("%s x%d: utilization %v", sys, n, u)
		}
		if _, ok := m["jain"]; ok != (n > 1) {
			t.Errorf("%s x%d: jain present %v", sys, n, ok)
		}
		if n > 1 && (num(t, m, "jain") <= 0 || num(t, m, "jain") > 1) {
			t.Errorf("%s x%d: jain %v", sys, n, m["jain"])
		}
	}
	for _, k := range []string{"erpc/1", "erpc/2", "erpc-nocc/1", "erpc-nocc/2", "grpc/1", "grpc/2"} {
		if count[k] != 1 {
			t.Errorf("rows per system/sessions: %v", count)
			break
		}
	}
}

func lossTestbedScenario(t *testing.T) {
	needTestbed(t)
	// 1 s: enough packets that 1 % loss drops some (a loaded machine
	// made too few calls in 300 ms for a drop to be sure).
	rows := runNetJSON(t, "loss", "-testbed", "-loss", "0.01", "-size", "32", "-c", "8", "-d", "1s", "-warmup", "100ms",
		"-vs", "grpc", "-json", "-pin=false")
	count := map[string]int{}
	for _, m := range rows {
		sys := m["system"].(string)
		count[sys]++
		if num(t, m, "ops") <= 0 || num(t, m, "errors") != 0 {
			t.Errorf("%s: %v", sys, m)
		}
		if l := num(t, m, "loss"); l == 0.01 {
			if r := num(t, m, "rel_lossless"); !(r > 0 && r < 3) || num(t, m, "dropped") <= 0 {
				t.Errorf("%s at 1%% loss: rel_lossless %v, dropped %v", sys, r, m["dropped"])
			}
		}
	}
	if count["erpc"] != 2 || count["grpc"] != 2 {
		t.Errorf("rows per system: %v", count)
	}
}
