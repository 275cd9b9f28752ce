//go:build linux

package network

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestNetFlags(t *testing.T) {
	c, err := ParseFlags("incast", nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	nc := c.Ext.(*netConfig)
	if !slices.Equal(nc.senders, []int{16, 50}) || nc.size != 256<<10 || nc.chunk != nc.size || nc.rate != 500e6 ||
		strings.Join(c.Systems, ",") != "erpc,erpc-nocc,grpc" {
		t.Errorf("incast defaults: %+v, systems %v", nc, c.Systems)
	}
	c, err = ParseFlags("multipath", []string{"-paths", "2,4", "-vs", "erpc-spray"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Ext.(*netConfig).fast != 250e6 || c.Ext.(*netConfig).slow != 50e6 || strings.Join(c.Systems, ",") != "erpc-spray,erpc" || !slices.Equal(c.Ext.(*netConfig).paths, []int{2, 4}) {
		t.Errorf("multipath: %+v, systems %v", c.Ext.(*netConfig), c.Systems)
	}
	for _, bad := range [][]string{
		{"incast", "-senders", "0"}, {"incast", "-chunk", "100K"}, {"incast", "-rate", "fast"},
		{"incast", "-vs", "raw-udp"}, {"multipath", "-paths", "1"},
	} {
		if _, err := ParseFlags(bad[0], bad[1:], io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if r, err := parseBitRate("1.5G"); err != nil || r != 1.5e9 {
		t.Errorf("1.5G: %v %v", r, err)
	}
}
