//go:build unix

package proto

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used so far, user and system.
// Benchmarks report it per operation besides the wall time: on a host
// shared with other work the process waits for a CPU now and then, which
// the wall time counts and the CPU time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
