// Package shm is erpc-go's same-host transport: datagrams between processes
// through shared memory, with no system call on the data path while both
// sides are busy. See the Linux implementation for the design.
package shm

import "errors"

// ErrNotSupported is returned where shared-memory transport is not available.
var ErrNotSupported = errors.New("shm: shared-memory transport is not supported on this platform")

// Options tunes a shared-memory transport; the zero value is the default.
type Options struct{}
