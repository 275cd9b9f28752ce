package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// TestMain lets the test binary serve as the benchmark's server process:
// the client re-executes os.Executable(), which here is the test binary.
func TestMain(m *testing.M) {
	if os.Getenv(proc.ChildEnv) == "1" {
		args := os.Args[1:]
		if len(args) > 0 && args[0] == "serve" {
			args = args[1:]
		}
		if err := proc.Serve(args); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// smokeLatency runs the latency scenario end to end for erpc and
// raw-udp, each server in its own process, for a fraction of a second.
func smokeLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	var out bytes.Buffer
	err := run([]string{"latency", "-size", "32,4096", "-d", "300ms", "-warmup", "100ms",
		"-vs", "raw-udp", "-json", "-pin=false"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 JSON lines, got %d:\n%s", len(lines), out.String())
	}
	seen := map[string]int{}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		for _, f := range contractFields {
			if _, ok := m[f]; !ok {
				t.Errorf("field %q missing: %s", f, l)
			}
		}
		checkErpcGridFields(t, m)
		if m["ops"].(float64) <= 0 || m["errors"].(float64) != 0 || m["p50_us"].(float64) <= 0 {
			t.Errorf("bad point: %s", l)
		}
		seen[m["system"].(string)]++
	}
	if seen["erpc"] != 2 || seen["raw-udp"] != 2 {
		t.Errorf("systems measured: %v", seen)
	}
}
