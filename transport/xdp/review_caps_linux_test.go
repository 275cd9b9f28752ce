//go:build linux

package xdp

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/erpc-go/erpc/internal/testnet"
)

const capsChildEnv = "ERPC_XDP_REVIEW_CAPS"

// TestReviewCapsChild is the child of TestReviewCapabilities: it only
// Listens and prints what happened.
func TestReviewCapsChild(t *testing.T) {
	arg := os.Getenv(capsChildEnv)
	if arg == "" {
		t.Skip("run by TestReviewCapabilities")
	}
	ifname, addr, _ := strings.Cut(arg, "|")
	tr, err := Listen(ifname, netip.MustParseAddrPort(addr), Options{})
	if err != nil {
		var which []string
		for _, s := range []struct {
			name string
			err  error
		}{{"ErrPermission", ErrPermission}, {"ErrNoInterface", ErrNoInterface}, {"ErrNotAttachable", ErrNotAttachable}, {"ErrKernel", ErrKernel}} {
			if errors.Is(err, s.err) {
				which = append(which, s.name)
			}
		}
		fmt.Printf("RESULT: error [%s]: %s\n", strings.Join(which, ","), strings.ReplaceAll(err.Error(), "\n", " / "))
		return
	}
	fmt.Printf("RESULT: ok, mode %s\n", tr.(*Transport).Mode())
	tr.Close()
}

// TestReviewCapabilities (promise 6 and the doc's requirements): the doc
// says Listen needs "root or CAP_NET_ADMIN with CAP_BPF". The test binary
// runs again as uid 65534 in namespace A with exactly those ambient
// capabilities, then with CAP_NET_RAW added (socket(AF_XDP) wants it),
// then with CAP_IPC_LOCK too (the 8 MiB UMEM counts against
// RLIMIT_MEMLOCK without it). What the doc names must suffice, and
// every failure must match one of the sentinel errors.
func TestReviewCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	p := newVethPair(t)
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
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const netAdmin, netRaw, ipcLock, bpf = 12, 13, 14, 39
	for _, c := range []struct {
		name string
		caps []uintptr
		doc  bool // the doc says this suffices
	}{
		// The review's first two cases were marked "the doc says this
		// suffices" against the old doc. The doc now says what AF_XDP
		// needs: CAP_NET_RAW for the sockets, and CAP_IPC_LOCK or an
		// RLIMIT_MEMLOCK with room for the 8 MiB UMEM (uid 65534's default
		// limit has none), so they are expected to fail, with an error
		// matching a sentinel (ErrPermission, naming what is missing).
		{"NET_ADMIN+BPF", []uintptr{netAdmin, bpf}, false},
		{"NET_ADMIN+BPF+NET_RAW", []uintptr{netAdmin, bpf, netRaw}, false},
		{"NET_ADMIN+BPF+NET_RAW+IPC_LOCK", []uintptr{netAdmin, bpf, netRaw, ipcLock}, true},
	} {
		var out []byte
		var runErr error
		if err := testnet.In(p.A, func() error {
			cmd := exec.Command(exe, "-test.run", "^TestReviewCapsChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), capsChildEnv+"="+p.ifname+"|"+netip.AddrPortFrom(p.AddrA, 0).String())
			cmd.Dir = dir
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Credential:  &syscall.Credential{Uid: 65534, Gid: 65534},
				AmbientCaps: c.caps,
			}
			out, runErr = cmd.CombinedOutput()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		res := ""
		for line := range strings.Lines(string(out)) {
			if r, ok := strings.CutPrefix(line, "RESULT: "); ok {
				res = strings.TrimSpace(r)
			}
		}
		if res == "" {
			t.Fatalf("%s: no result (%v):\n%s", c.name, runErr, out)
		}
		t.Logf("uid 65534 with %s: %s", c.name, res)
		switch {
		case strings.HasPrefix(res, "error []"):
			t.Errorf("%s: the error matches no sentinel (ErrPermission, ErrNoInterface, ErrNotAttachable, ErrKernel): %s", c.name, res)
		case strings.HasPrefix(res, "error") && c.doc:
			t.Errorf("%s: the doc says root or CAP_NET_ADMIN with CAP_BPF suffices, but Listen failed: %s", c.name, res)
		}
	}
}
