package main

import (
	"io"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"table", "-quick", "-vs", "grpc,raw-udp", "-size", "4K,1M"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.sizes) != 2 || c.sizes[0] != 4096 || c.sizes[1] != 1<<20 {
		t.Errorf("sizes %v", c.sizes)
	}
	if c.systems[0] != "erpc" || len(c.systems) != 3 {
		t.Errorf("systems %v", c.systems)
	}
	rc, err := parseFlags([]string{"raft", "-vs", "raft-tcp", "-d", "1s"}, io.Discard)
	if err != nil || len(rc.systems) != 2 || rc.systems[1] != "raft-tcp" || rc.sizes[0] != 80 || rc.conc[0] != 1 {
		t.Errorf("raft: %+v %v", rc, err)
	}
	if _, err := parseFlags([]string{"raft", "-vs", "grpc"}, io.Discard); err == nil {
		t.Error("raft -vs grpc accepted")
	}
	c, err = parseFlags([]string{"loss", "-testbed", "-vs", "grpc,raw-udp"}, io.Discard)
	if err != nil || !c.testbed || strings.Join(c.systems, ",") != "erpc,grpc" {
		t.Errorf("loss -testbed: %v, systems %v", err, c.systems)
	}
	for _, s := range []string{"nope"} {
		if _, err := parseFlags([]string{s}, io.Discard); err == nil {
			t.Errorf("scenario %q accepted", s)
		}
	}
	if c, _ := parseFlags([]string{"bandwidth"}, io.Discard); c.resp != 32 || c.sizes[0] != 8<<20 {
		t.Errorf("bandwidth defaults: resp %d sizes %v", c.resp, c.sizes)
	}
}
