//go:build linux

package shm

import (
	"errors"

	"github.com/erpc-go/erpc/transport"
)

// Listen opens a shared-memory transport. path is the unix socket through
// which peers connect; an empty path makes a client-only transport.
func Listen(path string, opts Options) (transport.Transport, error) {
	return nil, errors.New("shm: not implemented yet")
}
