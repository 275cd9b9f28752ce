package main

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario/raft"
)

// smokeRaftTransports runs the raft scenario end to end, erpc, raft-tcp and
// etcd-rawnode, each cluster in a server process of its own, for a
// fraction of a second, with the erpc endpoints on UDP and (on Linux) shm.
func smokeRaftTransports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	transports := []string{"udp"}
	if runtime.GOOS == "linux" {
		transports = append(transports, "shm")
	}
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) { smokeRaft(t, tr) })
	}
}

func smokeRaft(t *testing.T, transport string) {
	var out bytes.Buffer
	err := run([]string{"raft", "-transport", transport, "-vs", "raft-tcp," + raft.SysRawNode, "-d", "400ms", "-warmup", "100ms", "-breakdown", "200ms",
		"-json", "-pin=false"}, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 JSON lines, got %d:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		for _, f := range append(contractFields, "base_rtt_p50_us", "leader_apply_p50_us") {
			if _, ok := m[f]; !ok {
				t.Errorf("field %q missing: %s", f, l)
			}
		}
		want := []string{"erpc", "raft-tcp", raft.SysRawNode}[i]
		if m["scenario"] != "raft" || m["system"] != want || m["size"] != 80.0 || m["concurrency"] != 1.0 {
			t.Errorf("line %d: %s", i, l)
		}
		if m["ops"].(float64) <= 0 || m["errors"].(float64) != 0 || m["p50_us"].(float64) <= 0 {
			t.Errorf("bad point: %s", l)
		}
	}
}
