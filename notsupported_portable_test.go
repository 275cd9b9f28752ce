//go:build erpc_portable

package erpc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/udp"
)

// TestNotSupportedIsNotRetryable: off Linux (the erpc_portable tag
// simulates it) several UDP paths cannot be had: Listen and Dial say so
// with FailedPrecondition, a permanent error, not Unavailable (which
// callers retry), and the transport's ErrNotSupported stays in the chain.
func TestNotSupportedIsNotRetryable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, lerr := erpc.Listen("127.0.0.1:0", erpc.WithPaths(2))
	_, derr := erpc.Dial(ctx, "udp://127.0.0.1:9", erpc.WithPaths(2))
	for what, err := range map[string]error{"Listen": lerr, "Dial": derr} {
		if erpc.CodeOf(err) != erpc.FailedPrecondition || !errors.Is(err, udp.ErrNotSupported) {
			t.Errorf("%s with WithPaths(2) on the portable transport: %v; want FailedPrecondition matching udp.ErrNotSupported", what, err)
		}
	}
}
