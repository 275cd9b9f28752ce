//go:build !unix

package proto

import "time"

// cpuTime is 0 where getrusage is missing: benchmarks then report 0.
func cpuTime() time.Duration { return 0 }
