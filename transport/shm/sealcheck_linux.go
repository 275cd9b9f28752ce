//go:build linux

package shm

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// The transport seals each side's memory against writes by others with
// F_SEAL_FUTURE_WRITE, which Linux has since 5.1. On an older kernel the
// seal fails only when the first connection is made ("seal: invalid
// argument"), long after Listen said yes; so Listen asks the kernel once
// up front, on a memfd of its own, and reports ErrNotSupported with the
// reason.

// sealProbe tries the seals on a throwaway memfd (a test replaces it to
// stand in for an old kernel).
var sealProbe = probeSeals

// sealCheck caches a definite answer of sealProbe: supported (nil) or
// ErrNotSupported. Any other failure (out of file descriptors, say) is
// not cached: it may pass.
var sealCheck struct {
	mu   sync.Mutex
	done bool
	err  error
}

// checkSeals returns nil if this kernel has the seals the transport
// needs, else why not.
func checkSeals() error {
	sealCheck.mu.Lock()
	defer sealCheck.mu.Unlock()
	if sealCheck.done {
		return sealCheck.err
	}
	err := sealProbe()
	if err == nil || errors.Is(err, ErrNotSupported) {
		sealCheck.done, sealCheck.err = true, err
	}
	return err
}

// probeSeals makes a sealable memfd and seals it as createShared does.
func probeSeals() error {
	fd, err := unix.MemfdCreate("erpc-shm-probe", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%w: the kernel has no sealable memfd_create (%w); shm needs Linux 5.1 or later", ErrNotSupported, err)
	}
	if err != nil {
		return fmt.Errorf("shm: memfd_create: %w", err)
	}
	defer unix.Close(fd)
	_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_FUTURE_WRITE|unix.F_SEAL_SEAL)
	if errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%w: the kernel refuses F_SEAL_FUTURE_WRITE (%w); shm needs Linux 5.1 or later", ErrNotSupported, err)
	}
	if err != nil {
		return fmt.Errorf("shm: seal: %w", err)
	}
	return nil
}
