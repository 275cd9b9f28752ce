package erpc

import "time"

// SetEjectTiming shortens a Client's ejection (for tests): ejected after
// after failures in a row, for base (doubling). It returns the restore.
func SetEjectTiming(after int32, base time.Duration) (restore func()) {
	oldAfter, oldBase := ejectAfter, ejectBase
	ejectAfter, ejectBase = after, base
	return func() { ejectAfter, ejectBase = oldAfter, oldBase }
}
