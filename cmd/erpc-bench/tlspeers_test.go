package main

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
)

// runRows runs the command line args with -json and returns its rows,
// each checked for the contract's fields.
func runRows(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var out bytes.Buffer
	if err := run(append(args, "-json", "-pin=false"), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		for _, f := range contractFields {
			if _, ok := m[f]; !ok {
				t.Errorf("field %q missing: %s", f, l)
			}
		}
		rows = append(rows, m)
	}
	return rows
}

// systemsOf is the rows' systems, in order.
func systemsOf(rows []map[string]any) []string {
	var s []string
	for _, m := range rows {
		s = append(s, m["system"].(string))
	}
	return s
}

// smokeTLSPeers: the encrypted peers (grpc-tls, quic on a stream per
// call, quic-stream on one stream per goroutine) and erpc-tls run in the
// latency scenario beside erpc, each server in its own process, and
// every call of each is answered.
func smokeTLSPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	rows := runRows(t, "latency", "-size", "32,4096", "-d", "300ms", "-warmup", "100ms", "-vs", "erpc-tls,grpc-tls,quic,quic-stream")
	want := []string{"erpc", "erpc-tls", "grpc-tls", "quic", "quic-stream"}
	if got := systemsOf(rows); len(got) != 2*len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("systems %q, want %q for each size", got, want)
	}
	for _, m := range rows {
		if m["ops"].(float64) <= 0 || m["errors"].(float64) != 0 || m["p50_us"].(float64) <= 0 {
			t.Errorf("bad point: %v", m)
		}
	}
}

// smokeHandshake: the handshake scenario times -dials fresh sessions of
// each system, erpc's plaintext first, and every one of them succeeds.
func smokeHandshake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	const dials = 4
	rows := runRows(t, "handshake", "-dials", "4")
	want := []string{"erpc", "erpc-tls", "grpc-tls", "quic"}
	if got := systemsOf(rows); !slices.Equal(got, want) {
		t.Fatalf("systems %q, want %q (the default -vs)", got, want)
	}
	for _, m := range rows {
		if m["ops"].(float64) != dials || m["errors"].(float64) != 0 || m["p50_us"].(float64) <= 0 ||
			m["p99_us"].(float64) < m["p50_us"].(float64) || m["scenario"] != "handshake" {
			t.Errorf("bad row: %v", m)
		}
	}
}
