package main

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
)

// runJSON runs the command with -json and tiny durations and returns one
// map per output line.
func runJSON(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	args = append(args, "-json", "-pin=false", "-d", "200ms", "-warmup", "50ms")
	if err := run(args, &out, &errb); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, errb.String())
	}
	var recs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
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
		recs = append(recs, m)
	}
	if errb.Len() > 0 && strings.Contains(errb.String(), "\r") {
		t.Errorf("progress bar drawn with -json: %q", errb.String())
	}
	return recs
}

// healthy checks that every record completed calls without errors and
// returns the records by system.
func healthy(t *testing.T, recs []map[string]any) map[string][]map[string]any {
	t.Helper()
	by := map[string][]map[string]any{}
	for _, m := range recs {
		if m["ops"].(float64) <= 0 || m["errors"].(float64) != 0 {
			t.Errorf("bad point: %v", m)
		}
		by[m["system"].(string)] = append(by[m["system"].(string)], m)
	}
	return by
}

// skipShort skips under -short; the smoke tests run in parallel, each
// with server processes of its own.
func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	t.Parallel()
}

func smokeRate(t *testing.T) {
	skipShort(t)
	by := healthy(t, runJSON(t, "rate", "-size", "32", "-c", "4", "-vs", "grpc,netrpc,drpc"))
	for _, s := range []string{"erpc", "grpc", "netrpc", "drpc"} {
		if len(by[s]) != 1 || by[s][0]["concurrency"] != 4.0 {
			t.Errorf("%s: %v", s, by[s])
		}
	}
}

// smokeBandwidth runs raw-udp's windowed stream with a window smaller
// than a message, so its flow control is exercised, beside erpc and the
// memcpy reference.
func smokeBandwidth(t *testing.T) {
	skipShort(t)
	by := healthy(t, runJSON(t, "bandwidth", "-size", "1M", "-c", "1,2", "-vs", "raw-udp", "-raw-window", "262144"))
	if len(by["erpc"]) != 2 || len(by["raw-udp"]) != 2 || len(by["memcpy"]) != 2 {
		t.Fatalf("systems: %v", by)
	}
	for _, m := range by["raw-udp"] {
		if m["lost_datagrams"] != 0.0 || m["datagram_bytes"].(float64) < 1472 {
			t.Errorf("raw-udp: %v", m)
		}
	}
	for _, m := range append(by["erpc"], by["memcpy"]...) {
		if m["resp_size"] != 32.0 && m["system"] == "erpc" || m["gbytes_per_s"].(float64) <= 0 {
			t.Errorf("bandwidth record: %v", m)
		}
	}
}

func smokeTable(t *testing.T) {
	skipShort(t)
	by := healthy(t, runJSON(t, "table", "-size", "128,64K", "-c", "2", "-vs", "raw-udp"))
	if len(by["erpc"]) != 2 || len(by["raw-udp"]) != 2 {
		t.Fatalf("systems: %v", by)
	}
}

func smokeSessions(t *testing.T) {
	skipShort(t)
	recs := healthy(t, runJSON(t, "sessions", "-sessions", "1,200", "-after-load", "1s"))["erpc"]
	if len(recs) != 3 {
		t.Fatalf("records: %v", recs)
	}
	last := recs[1]
	if last["sessions"] != 200.0 || last["sessions_used"] != 200.0 || last["rel_1session"] == nil ||
		last["mem_per_session_bytes"] == nil {
		t.Errorf("sessions record: %v", last)
	}
	if m := recs[2]; m["phase"] != "after_load" || m["rss_loaded_bytes"] == nil || m["rss_after_bytes"] == nil ||
		m["rss_before_load_bytes"] == nil || m["size"] != 65536.0 {
		t.Errorf("memory-after-load record: %v", m)
	}
}

func smokeLoss(t *testing.T) {
	skipShort(t)
	recs := healthy(t, runJSON(t, "loss", "-size", "32", "-loss", "1e-2"))["erpc"]
	if len(recs) != 2 || recs[1]["loss"] != 1e-2 || recs[1]["rel_lossless"] == nil {
		t.Fatalf("records: %v", recs)
	}
}

func smokeShm(t *testing.T) {
	skipShort(t)
	if runtime.GOOS != "linux" {
		t.Skip("shm is Linux only")
	}
	by := healthy(t, runJSON(t, "latency", "-transport", "shm", "-size", "32", "-vs", "raw-shm,erpc-udp"))
	for s, tr := range map[string]string{"erpc": "shm", "raw-shm": "shm", "erpc-udp": "udp"} {
		if len(by[s]) != 1 || by[s][0]["transport"] != tr {
			t.Errorf("%s: %v", s, by[s])
		}
	}
}

func TestParseFlagsSystems(t *testing.T) {
	c, err := parseFlags([]string{"latency", "-transport", "shm", "-vs", "raw-shm,erpc-udp"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Systems, ",") != "erpc,raw-shm,erpc-udp" || c.RawDgram != 0 {
		t.Errorf("systems %v, raw-dgram %d", c.Systems, c.RawDgram)
	}
	c, _ = parseFlags([]string{"bandwidth", "-vs", "raw-udp"}, io.Discard)
	if strings.Join(c.Systems, ",") != "erpc,raw-udp,memcpy" {
		t.Errorf("bandwidth systems %v", c.Systems)
	}
	c, _ = parseFlags([]string{"sessions", "-vs", "grpc"}, io.Discard)
	if strings.Join(c.Systems, ",") != "erpc" || len(c.Sessions) != 3 {
		t.Errorf("sessions: systems %v sessions %v", c.Systems, c.Sessions)
	}
	for _, bad := range [][]string{
		{"latency", "-raw-dgram", "10"},
		{"latency", "-vs", "nope"},
		{"latency", "-transport", "quic"},
		{"loss", "-loss", "1.5"},
		{"rate", "-c", "x"},
		{"rate", "-d", "0s"},
	} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if v, err := scenario.ParseSize("8MiB"); err != nil || v != 8<<20 {
		t.Errorf("parseSize(8MiB) = %d, %v", v, err)
	}
}
