package main

import (
	"strings"
	"testing"
)

// TestSmokeUDPFloor runs the latency scenario with udp-floor beside erpc,
// its server in a process of its own, for a fraction of a second.
func TestSmokeUDPFloor(t *testing.T) {
	skipShort(t)
	var floor []map[string]any
	for _, m := range runJSON(t, "latency", "-vs", "udp-floor", "-size", "32") {
		if m["system"] == "udp-floor" {
			floor = append(floor, m)
		}
	}
	if len(floor) != 1 {
		t.Fatalf("udp-floor records: %v", floor)
	}
	m := floor[0]
	if m["ops"].(float64) <= 0 || m["errors"].(float64) != 0 || m["transport"] != "udp" || m["error"] != nil {
		t.Errorf("udp-floor record: %v", m)
	}
	// Not a strict 0: the client process's other goroutines allocate too.
	if a := m["allocs_per_op"].(float64); a < 0 || a >= 0.5 {
		t.Errorf("udp-floor allocates per call: allocs_per_op %v", a)
	}
}

func TestUDPFloorCheck(t *testing.T) {
	for _, p := range []point{{size: 32, resp: 32, conc: 1}, {size: 0, resp: 0, conc: 1},
		{size: 65507, resp: 32, conc: 1}, {size: 4, resp: 4, conc: 64}} {
		if err := udpFloorCheck(p); err != nil {
			t.Errorf("%+v refused: %v", p, err)
		}
	}
	for p, want := range map[point]string{
		{size: 65508, resp: 32, conc: 1}: "does not fit one datagram",
		{size: 32, resp: 65508, conc: 1}: "does not fit one datagram",
		{size: 2, resp: 32, conc: 2}:     "-c 2 needs",
	} {
		if err := udpFloorCheck(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want one saying %q", p, err, want)
		}
	}
}
