package erpc

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
)

// Spinning must not starve the work it waits for. A default-mode loop
// polls, yielding, for its spin window after its last work (spin.go);
// that pays while the processor would otherwise be idle, and costs
// everyone when it would not:
//
//   - Within a process, Go checks its netpoller only when a processor
//     finds nothing to run. Loops that keep every processor busy leave
//     that to the system monitor, every 10 ms: five endpoints of one
//     process on two processors, each spinning up to a millisecond after
//     every call of an open-loop 2,000 calls/s, took p50 8.7 ms for a
//     500 µs handler, against 1.8 ms with a 20 µs window (loopback,
//     Background handlers, this 2-core host under other load). So at most
//     GOMAXPROCS-1 loops of a process spin at once (one where GOMAXPROCS is
//     1 or 2 would make it none: then one): a loop that finds the others
//     spinning parks.
//   - Across processes (replicas of a service on one host, a benchmark's
//     client and server), the operating system shares the cores: a spin
//     whose idle turns come far apart (spinContended) was descheduled, or
//     gave way at its yield to work of its own process, so the processor
//     is wanted. The loop then parks at once and halves its window.
//
// Busy polling (WithBusyPoll) is the user's choice of a core per loop and
// is exempt.

// spinContended is the gap between two idle turns of a spinning loop that
// says the processor is wanted elsewhere: an idle turn (a clock read, an
// empty receive, a yield with nothing else to run) takes a few
// microseconds.
const spinContended = 100 * time.Microsecond

// spinners counts the loops of the process that spin now.
var spinners atomic.Int32

// spinLimit is how many loops of the process may spin at once.
func spinLimit() int32 { return int32(max(runtime.GOMAXPROCS(0)-1, 1)) }

// spinShare is a loop's part in the bound (loop-owned).
type spinShare struct {
	limit    int32      // spinLimit when the endpoint started
	holding  bool       // the loop counts in spinners
	lastIdle proto.Time // when its last idle turn ended; 0: the last turn was not idle
	refused  int        // spins given up for another loop's (a test's)
	yielded  int        // spins given up because the processor was wanted (a test's)
}

// maySpin reports whether the loop may spend an idle turn spinning now,
// taking a place among the spinners if it has none.
func (ep *Endpoint) maySpin(now proto.Time) bool {
	if ep.opts.busyPoll {
		return true
	}
	l := &ep.loop.share
	if l.holding && l.lastIdle != 0 && now.Sub(l.lastIdle) > spinContended {
		l.yielded++
		ep.loop.spin.cur = max(ep.loop.spin.cur/2, ep.loop.spin.lo)
		return false
	}
	if l.holding {
		return true
	}
	for {
		n := spinners.Load()
		if n >= l.limit {
			l.refused++
			return false
		}
		if spinners.CompareAndSwap(n, n+1) {
			l.holding = true
			return true
		}
	}
}

// noteIdleTurn records when an idle turn of the spin ended (found: its
// poll found work), for maySpin's check. Only a default-mode spin that
// found nothing reads the clock for it: a busy-polling loop is exempt from
// the check, and a poll that found work is followed by the turn that
// takes it, with no clock read in between (over shm that read was a
// tenth of the loop's samples, on the path of every message).
func (ep *Endpoint) noteIdleTurn(found bool) {
	l := &ep.loop.share
	if ep.opts.busyPoll || found {
		l.lastIdle = 0
		return
	}
	l.lastIdle = ep.now()
}

// stopSpin gives the loop's place back: it worked or it parks.
func (ep *Endpoint) stopSpin() {
	l := &ep.loop.share
	l.lastIdle = 0
	if l.holding {
		l.holding = false
		spinners.Add(-1)
	}
}
