//go:build linux

package shm

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSealProbeOldKernel: on a kernel without F_SEAL_FUTURE_WRITE (the
// probe made to fail as Linux before 5.1 does, with EINVAL) Listen, of a
// listener and of a client-only transport, reports ErrNotSupported with
// the reason, and asks the kernel once.
func TestSealProbeOldKernel(t *testing.T) {
	probes := 0
	restore := setSealProbe(func() error {
		probes++
		return fmt.Errorf("%w: the kernel refuses F_SEAL_FUTURE_WRITE (%w); shm needs Linux 5.1 or later", ErrNotSupported, unix.EINVAL)
	})
	defer restore()
	for _, path := range []string{filepath.Join(t.TempDir(), "sock"), ""} {
		tr, err := Listen(path, Options{})
		if err == nil {
			tr.Close()
			t.Fatalf("Listen(%q) on a kernel without the seals succeeded", path)
		}
		if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EINVAL) {
			t.Fatalf("Listen(%q): %v; want ErrNotSupported with the reason", path, err)
		}
	}
	if probes != 1 {
		t.Fatalf("the kernel was asked %d times; want once", probes)
	}
}

// TestSealProbeTransientNotCached: a probe that fails for a passing
// reason (no file descriptors left) fails that Listen, and the next one
// asks again.
func TestSealProbeTransientNotCached(t *testing.T) {
	probes := 0
	restore := setSealProbe(func() error {
		probes++
		if probes == 1 {
			return fmt.Errorf("shm: memfd_create: %w", unix.EMFILE)
		}
		return nil
	})
	defer restore()
	if _, err := Listen("", Options{}); !errors.Is(err, unix.EMFILE) || errors.Is(err, ErrNotSupported) {
		t.Fatalf("first Listen: %v; want EMFILE, not ErrNotSupported", err)
	}
	tr, err := Listen("", Options{})
	if err != nil {
		t.Fatalf("second Listen: %v", err)
	}
	tr.Close()
	if probes != 2 {
		t.Fatalf("probed %d times; want 2", probes)
	}
}

// TestSealProbeThisKernel: the real probe passes here (the tests need
// Linux 5.1 or later anyway).
func TestSealProbeThisKernel(t *testing.T) {
	if err := probeSeals(); err != nil {
		t.Fatal(err)
	}
}

// setSealProbe replaces the probe and forgets its cached answer, until
// the returned func puts both back.
func setSealProbe(f func() error) (restore func()) {
	sealCheck.mu.Lock()
	old, done, err := sealProbe, sealCheck.done, sealCheck.err
	sealProbe, sealCheck.done, sealCheck.err = f, false, nil
	sealCheck.mu.Unlock()
	return func() {
		sealCheck.mu.Lock()
		sealProbe, sealCheck.done, sealCheck.err = old, done, err
		sealCheck.mu.Unlock()
	}
}
