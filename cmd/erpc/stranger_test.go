package main

import (
	"strings"
	"testing"
)

// TestTargetErrorsListEveryScheme: the command's refusals of a target
// list every form it takes, tcp:// included (which works), so a user who
// typed a wrong one learns the right one.
func TestTargetErrorsListEveryScheme(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"localhost", "http://localhost:31850", "https://localhost:31850"} {
		r := erpcCmd(t, "", target, "list")
		for _, form := range []string{"host:port", "udp://host:port", "tcp://host:port", "shm:///path"} {
			if r.code == 0 || !strings.Contains(r.stderr, form) {
				t.Errorf("erpc %s list: %v\nwant a refusal listing %s", target, r, form)
			}
		}
	}
}

// TestTLSServerWithoutFlagsNamesTheFlags: a client without TLS flags (or
// with -plaintext) against a TLS server is told the command's own flags
// (-cacert FILE, -insecure), not the Go API (erpc.WithTLS).
func TestTLSServerWithoutFlagsNamesTheFlags(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, _, _ := writeCert(t, dir, "ca.example", nil, nil)
	writeCert(t, dir, "localhost", ca, caKey)
	t.Setenv(tlsDirEnv, dir)
	target := startServer(t, modeFull)
	for _, args := range [][]string{{target, "list"}, {"-plaintext", target, "health"}} {
		r := erpcCmd(t, "", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "-cacert FILE") || !strings.Contains(r.stderr, "-insecure") ||
			strings.Contains(r.stderr, "erpc.WithTLS") {
			t.Errorf("erpc %s against a TLS server: %v\nwant the flags -cacert FILE and -insecure, not erpc.WithTLS", strings.Join(args, " "), r)
		}
	}
}
