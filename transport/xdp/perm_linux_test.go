//go:build linux

package xdp

import (
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// unprivEnv makes the test binary, re-executed as an unprivileged user,
// only try Listen and print what it said.
const unprivEnv = "ERPC_XDP_TEST_UNPRIV"

// TestUnprivileged: a process that is not root and has no capabilities
// fails to Listen with ErrPermission, whose message names what AF_XDP
// needs; with FallbackUDP it gets a UDP transport and one log line. The
// test binary runs again as nobody (uid 65534) to be that process.
func TestUnprivileged(t *testing.T) {
	if os.Getenv(unprivEnv) == "1" {
		_, err := Listen("lo", netip.MustParseAddrPort("127.0.0.1:0"), Options{})
		if !errors.Is(err, ErrPermission) {
			t.Fatalf("Listen as uid %d: %v, want ErrPermission", os.Geteuid(), err)
		}
		t.Logf("error: %v", err)
		tr, err := Listen("lo", netip.MustParseAddrPort("127.0.0.1:0"), Options{FallbackUDP: true})
		if err != nil {
			t.Fatalf("FallbackUDP: %v", err)
		}
		tr.Close()
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("runs the test binary as another user: needs root")
	}
	// A copy that nobody may run: go test's build directory is root's.
	src, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "xdp.test")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} { // t.TempDir makes both 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(exe, "-test.run", "^TestUnprivileged$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), unprivEnv+"=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	t.Logf("as nobody:\n%s", out)
	for _, want := range []string{"needs root, or CAP_NET_ADMIN, CAP_BPF and CAP_NET_RAW", "AF_XDP unavailable, using UDP", "--- PASS: TestUnprivileged"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
