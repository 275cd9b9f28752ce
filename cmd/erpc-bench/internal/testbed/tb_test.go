//go:build linux

package testbed

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestNoTestbed: a Skip inside the scenario (not root, a tool missing)
// becomes ErrNoTestbed with its message, and the cleanups run.
func TestNoTestbed(t *testing.T) {
	cleaned := false
	err := Run(io.Discard, func(tb *TB) error {
		tb.Cleanup(func() { cleaned = true })
		tb.Skip("testnet: needs root to create network namespaces")
		return nil
	})
	if !errors.Is(err, ErrNoTestbed) || !strings.Contains(err.Error(), "needs root") || !cleaned {
		t.Errorf("err %v, cleaned %v", err, cleaned)
	}
	err = Run(io.Discard, func(tb *TB) error { tb.Fatalf("setup failed: %d", 3); return nil })
	if err == nil || err.Error() != "setup failed: 3" {
		t.Errorf("Fatalf: %v", err)
	}
}
