package main

import (
	"testing"
)

// TestSmokeUDPFloor runs the latency scenario with udp-floor (connected
// sockets) and udp-plain (sendto and recvfrom) beside erpc, each server in
// a process of its own, for a fraction of a second, and at -c 4 (slots
// told apart by their tags), where a reply that went to the wrong address
// or slot would fail the point.
//
// It does not run in parallel with the other smoke tests: allocs_per_op
// counts every allocation of the client's process, which is this test
// binary, and with the other smoke tests running beside it CI measured
// 0.79 allocations per call on udp-floor.
func TestSmokeUDPFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	for _, c := range []string{"1", "4"} {
		got := map[string]map[string]any{}
		for _, m := range runJSON(t, "latency", "-vs", "udp-floor,udp-plain", "-size", "32", "-c", c) {
			got[m["system"].(string)] = m
		}
		for _, sys := range []string{"udp-floor", "udp-plain"} {
			m := got[sys]
			if m == nil {
				t.Fatalf("-c %s: no %s record in %v", c, sys, got)
			}
			if m["ops"].(float64) <= 0 || m["errors"].(float64) != 0 || m["transport"] != "udp" || m["error"] != nil {
				t.Errorf("-c %s: %s record: %v", c, sys, m)
			}
			// Not a strict 0: the client process's other goroutines allocate too.
			if a := m["allocs_per_op"].(float64); a < 0 || a >= 0.5 {
				t.Errorf("-c %s: %s allocates per call: allocs_per_op %v", c, sys, a)
			}
		}
	}
}
