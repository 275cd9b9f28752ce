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
	if len(c.Sizes) != 2 || c.Sizes[0] != 4096 || c.Sizes[1] != 1<<20 {
		t.Errorf("sizes %v", c.Sizes)
	}
	if c.Systems[0] != "erpc" || len(c.Systems) != 3 {
		t.Errorf("systems %v", c.Systems)
	}
	rc, err := parseFlags([]string{"raft", "-vs", "raft-tcp", "-d", "1s"}, io.Discard)
	if err != nil || len(rc.Systems) != 2 || rc.Systems[1] != "raft-tcp" || rc.Sizes[0] != 80 || rc.Conc[0] != 1 {
		t.Errorf("raft: %+v %v", rc, err)
	}
	if _, err := parseFlags([]string{"raft", "-vs", "grpc"}, io.Discard); err == nil {
		t.Error("raft -vs grpc accepted")
	}
	c, err = parseFlags([]string{"loss", "-testbed", "-vs", "grpc,raw-udp"}, io.Discard)
	if err != nil || !c.Testbed || strings.Join(c.Systems, ",") != "erpc,grpc" {
		t.Errorf("loss -testbed: %v, systems %v", err, c.Systems)
	}
	for _, s := range []string{"nope"} {
		if _, err := parseFlags([]string{s}, io.Discard); err == nil {
			t.Errorf("scenario %q accepted", s)
		}
	}
	if c, _ := parseFlags([]string{"bandwidth"}, io.Discard); c.Resp != 32 || c.Sizes[0] != 8<<20 {
		t.Errorf("bandwidth defaults: resp %d sizes %v", c.Resp, c.Sizes)
	}
}
