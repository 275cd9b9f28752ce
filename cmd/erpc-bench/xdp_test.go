//go:build linux

package main

import (
	"strings"
	"testing"
)

// TestXDPLatency: latency -transport xdp, tiny, as root: erpc over AF_XDP,
// erpc over UDP and raw-udp on the veth pair all complete calls (raw-udp's
// server once listened on loopback in its namespace, out of the client's
// reach), and the xdp row says its mode. Figures are docs/benchmarks/xdp.md's, not asserted here.
func TestXDPLatency(t *testing.T) {
	needTestbed(t)
	rows := runNetJSON(t, "latency", "-transport", "xdp", "-vs", "udp,raw-udp", "-size", "32", "-d", "300ms", "-warmup", "100ms", "-json")
	seen := map[string]bool{}
	for _, r := range rows {
		sys, tr := r["system"].(string), r["transport"].(string)
		seen[sys+"/"+tr] = true
		if ops, _ := r["ops"].(float64); ops == 0 {
			t.Errorf("%s over %s completed no call: %v", sys, tr, r)
		}
		mode, _ := r["xdp_mode"].(string)
		switch {
		case tr == "xdp" && !strings.Contains(mode, "/copy") && !strings.Contains(mode, "/zerocopy"):
			t.Errorf("xdp row's xdp_mode %q", mode)
		case tr != "xdp" && mode != "":
			t.Errorf("%s row carries xdp_mode %q", tr, mode)
		}
	}
	if !seen["erpc/xdp"] || !seen["erpc-udp/udp"] || !seen["raw-udp/udp"] {
		t.Fatalf("rows for %v, want erpc/xdp, erpc-udp/udp and raw-udp/udp", seen)
	}
}
