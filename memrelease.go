package erpc

import (
	"runtime/debug"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
)

// Receive memory follows load. The engine's pool gives back free message
// buffers unused for two seconds (internal/proto's pool_release.go), but
// memory dropped from the pool returns only to the Go heap: it reaches
// the operating system after the next garbage collection, and an idle
// process may run none for two minutes. So once the pool has given back
// freeOSAfter bytes, the endpoint asks the runtime to return freed memory
// to the operating system now, on a goroutine of its own and at most once
// per freeOSEvery: after a load ends, the process's RSS falls within
// seconds instead of minutes. A steady load keeps its buffers and never
// triggers it.
const (
	freeOSAfter = 16 << 20
	freeOSEvery = 30 * time.Second
)

// memRelease is the loop's record of what the pool gave back (loop-owned).
type memRelease struct {
	pending int        // bytes given back since the last request to the OS
	last    proto.Time // the last request
	asked   bool       // whether there was one
	runs    int        // requests made (a test's)
}

// noteRelease is called by the loop after each Tick.
func (ep *Endpoint) noteRelease(now proto.Time) {
	n := ep.eng.PoolReleased()
	if n == 0 {
		return
	}
	m := &ep.loop.mem
	m.pending += n
	if m.pending < freeOSAfter || (m.asked && now.Sub(m.last) < freeOSEvery) {
		return
	}
	m.pending, m.last, m.asked = 0, now, true
	m.runs++
	go debug.FreeOSMemory()
}
