package fleet

import (
	"io"
	"slices"
	"testing"
)

// TestParseFlags: the defaults are the documented ones (4 replicas, every
// part, gRPC beside erpc), the parts and peers parse, and nonsense is
// refused with an error rather than run.
func TestParseFlags(t *testing.T) {
	c, err := ParseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	fc := c.Ext.(*fleetConfig)
	if fc.servers != 4 || !slices.Equal(fc.scenarios, Scenarios) || !slices.Equal(c.Systems, []string{"erpc", "grpc"}) || !fc.cc {
		t.Errorf("defaults: servers %d scenarios %v systems %v cc %v", fc.servers, fc.scenarios, c.Systems, fc.cc)
	}
	c, err = ParseFlags([]string{"-scenarios", "slow,kill,slow", "-vs", "none", "-rate", "500"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	fc = c.Ext.(*fleetConfig)
	if !slices.Equal(fc.scenarios, []string{"slow", "kill"}) || !slices.Equal(c.Systems, []string{"erpc"}) || fc.rate != 500 {
		t.Errorf("scenarios %v systems %v rate %v", fc.scenarios, c.Systems, fc.rate)
	}
	for _, bad := range [][]string{
		{"-scenarios", "explode"}, {"-scenarios", ""}, {"-vs", "netrpc"}, {"-servers", "1"}, {"-rate", "0"},
		{"-d", "0s"}, {"-storm-procs", "17"}, {"-connect-rate", "0"}, {"-dns-period", "-1s"}, {"extra"},
	} {
		if _, err := ParseFlags(bad, io.Discard); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// TestSystemsOf: round robin runs beside P2C only in slow; gRPC only in
// the parts it applies to, and only when asked for.
func TestSystemsOf(t *testing.T) {
	for _, c := range []struct {
		part string
		vs   []string
		want []string
	}{
		{"slow", []string{"erpc", "grpc"}, []string{"erpc", "erpc-rr", "grpc"}},
		{"kill", []string{"erpc", "grpc"}, []string{"erpc", "grpc"}},
		{"restart-storm", []string{"erpc", "grpc"}, []string{"erpc"}},
		{"add", []string{"erpc"}, []string{"erpc"}},
	} {
		if got := systemsOf(c.part, c.vs); !slices.Equal(got, c.want) {
			t.Errorf("%s %v: %v, want %v", c.part, c.vs, got, c.want)
		}
	}
}
