package main

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
)

// smokeStream runs the stream scenario briefly, erpc beside gRPC, with
// two sizes, one and two streams and the slow-consumer row: every row
// has the fields (streams, size, msgs_per_s, gbps, p50_us), a
// rate, and the slow-consumer row its rel_solo. It does not run in
// parallel with the other cases: its floods take both cores, and the
// others' brief windows (memcpy's in bandwidth, say) then measured
// nothing.
func smokeStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	by := healthy(t, runJSON(t, "stream", "-size", "32,4K", "-streams", "1,2", "-vs", "grpc"))
	for sys, tr := range map[string]string{"erpc": "udp", "grpc": "tcp"} {
		rows := by[sys]
		if len(rows) != 6 {
			t.Fatalf("%s: %d rows, want 2 sizes x (1, 2 streams, slow consumer): %v", sys, len(rows), rows)
		}
		slow := 0
		for _, m := range rows {
			for _, f := range []string{"streams", "msgs_per_s", "kind"} {
				if _, ok := m[f]; !ok {
					t.Errorf("%s: no %q: %v", sys, f, m)
				}
			}
			if m["scenario"] != "stream" || m["transport"] != tr || m["msgs_per_s"].(float64) <= 0 || m["gbps"].(float64) <= 0 {
				t.Errorf("%s: %v", sys, m)
			}
			if m["kind"] == "slow-consumer" {
				slow++
				if m["rel_solo"] == nil || m["rel_solo"].(float64) <= 0 || m["solo_msgs_per_s"].(float64) <= 0 || m["streams"] != 1.0 {
					t.Errorf("%s slow consumer: %v", sys, m)
				}
				continue
			}
			if m["p50_us"].(float64) <= 0 || m["pingpong_round_trips"].(float64) <= 0 || m["streams"] != m["concurrency"] {
				t.Errorf("%s rate row: %v", sys, m)
			}
		}
		if slow != 2 {
			t.Errorf("%s: %d slow-consumer rows, want one per size", sys, slow)
		}
	}
}

// smokeBlocking runs latency -blocking briefly: an unloaded and a loaded
// row, the loaded one with the figures that show the load ran (Block
// calls answered) and the ratio. Without the handoff the loaded echo may
// not complete in so short a window: its ops are not required.
func smokeBlocking(t *testing.T) {
	skipShort(t)
	recs := runJSON(t, "latency", "-blocking", "-size", "32")
	if len(recs) != 2 {
		t.Fatalf("want 2 rows (unloaded, loaded), got %v", recs)
	}
	idle, loaded := recs[0], recs[1]
	if idle["system"] != "erpc" || idle["ops"].(float64) <= 0 || idle["errors"] != 0.0 || idle["blocking_inflight"] != 0.0 {
		t.Errorf("unloaded row: %v", idle)
	}
	if loaded["blocking_inflight"] != 10.0 || loaded["blocking_handler_ms"] != 100.0 || loaded["errors"] != 0.0 ||
		loaded["blocking_calls_per_s"].(float64) <= 0 || loaded["blocking_call_mean_ms"].(float64) < 100 {
		t.Errorf("loaded row: %v", loaded)
	}
	if loaded["ops"].(float64) > 0 && loaded["p50_rel_unloaded"] == nil {
		t.Errorf("loaded row without its ratio: %v", loaded)
	}
}

// TestStreamAndBlockingFlags checks what the stream scenario and latency
// -blocking accept and refuse.
func TestStreamAndBlockingFlags(t *testing.T) {
	c, err := parseFlags([]string{"stream"}, io.Discard)
	if err != nil || strings.Join(c.Systems, ",") != "erpc,grpc" || fmt.Sprint(c.Sizes) != "[32 65536]" || fmt.Sprint(c.Conc) != "[1 16]" {
		t.Fatalf("stream defaults: %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"latency", "-blocking", "-vs", "grpc,erpc-call"}, io.Discard)
	if err != nil || strings.Join(c.Systems, ",") != "erpc,erpc-call" || c.Window != 2*scenario.BlockingInflight {
		t.Fatalf("latency -blocking: %+v, %v", c, err)
	}
	for _, bad := range [][]string{
		{"stream", "-streams", "0"},
		{"stream", "-streams", "2000"},
		{"stream", "-vs", "drpc"},
		{"stream", "-size", "8M"},
		{"stream", "-rounds", "0"},
		{"rate", "-blocking"},
	} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
