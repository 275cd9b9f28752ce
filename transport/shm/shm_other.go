//go:build !linux

package shm

import "github.com/erpc-go/erpc/transport"

// Listen reports ErrNotSupported: the shared-memory transport needs Linux.
func Listen(path string, opts Options) (transport.Transport, error) {
	return nil, ErrNotSupported
}
