package meter

import (
	"fmt"
	"os"
	"time"
)

// Watchdog ends the run if a step hangs (a server that stopped answering,
// a library bug): better a clear message and an exit than a benchmark
// that never returns. Servers die with the client (Pdeathsig).
func Watchdog(what string, limit time.Duration) (stop func()) {
	t := time.AfterFunc(limit, func() {
		fmt.Fprintf(os.Stderr, "\nerpc-bench: %s did not finish within %v; giving up\n", what, limit)
		os.Exit(3)
	})
	return func() { t.Stop() }
}
