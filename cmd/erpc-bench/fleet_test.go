//go:build linux

package main

import (
	"math"
	"os/exec"
	"testing"
)

// fleetScenario runs every part of the fleet scenario with 1 s phases at a
// low rate, as root: each row has the fleet's fields (calls, failed,
// per_server summing to 1) and its part's, and the calls all come from the
// run (calls > 0, failed <= calls), and the change happened (see
// below). Targets are not asserted (no timed
// performance assertions in tests): docs/benchmarks/fleet.md records
// full runs.
func fleetScenario(t *testing.T) {
	needTestbed(t)
	if _, err := exec.LookPath("dnsmasq"); err != nil {
		t.Log("dnsmasq not installed: static:/// targets, add skipped")
	}
	rows := runNetJSON(t, "fleet", "-d", "1s", "-warmup", "300ms", "-rate", "300", "-storm-procs", "2",
		"-storm-clients", "5", "-json")
	want := map[string][]string{
		"kill":          {"p99_before_us", "p99_after_us", "recovery_ms", "failed_after_detect"},
		"drain":         {"p99_before_us", "p99_after_us", "drained_last_call_ms"},
		"add":           {"new_share_2s", "first_call_ms", "resolvable_ms"},
		"slow":          {"p99_healthy_us", "p99_slow_us", "slow_share"},
		"restart-storm": {"max_connects_per_s", "connect_bound_per_s", "recovered", "recovery_ms", "sessions"},
	}
	seen := map[string]int{}
	for _, m := range rows {
		part, _ := m["scenario"].(string)
		seen[part+"/"+m["system"].(string)]++
		if e, ok := m["error"].(string); ok && num(t, m, "calls") == 0 {
			t.Errorf("%s %s: %s", part, m["system"], e)
			continue
		}
		calls, failed := num(t, m, "calls"), num(t, m, "failed")
		if calls <= 0 || failed < 0 || failed > calls {
			t.Errorf("%s %s: calls %v failed %v", part, m["system"], calls, failed)
		}
		ps, _ := m["per_server"].([]any)
		sum := 0.0
		for _, v := range ps {
			sum += v.(float64)
		}
		if len(ps) < 4 || math.Abs(sum-1) > 0.01 {
			t.Errorf("%s %s: per_server %v", part, m["system"], ps)
		}
		for _, f := range want[part] {
			num(t, m, f)
		}
		// The change happened: the killed or drained replica served
		// next to none of the calls planned after it (those already on
		// their way); the added one is a fifth column; the restarted
		// replicas saw sessions opened.
		switch part {
		case "kill", "drain":
			if s0 := num(t, m, "replica0_share_after"); s0 >= 0.1 {
				t.Errorf("%s %s: replica 0's share %v: still served after the change", part, m["system"], s0)
			}
		case "add":
			if len(ps) != 5 {
				t.Errorf("add %s: per_server %v, want 5 replicas", m["system"], ps)
			}
		case "restart-storm":
			if num(t, m, "max_connects_per_s") < 1 || num(t, m, "recovered") < 1 {
				t.Errorf("restart-storm: no session opened to the restarted replicas, or none recovered: %v", m)
			}
		}
	}
	for _, k := range []string{"kill/erpc", "kill/grpc", "drain/erpc", "drain/grpc", "slow/erpc", "slow/erpc-rr", "slow/grpc", "restart-storm/erpc"} {
		if seen[k] != 1 {
			t.Errorf("%d rows for %s, want 1 (rows: %v)", seen[k], k, seen)
		}
	}
}
