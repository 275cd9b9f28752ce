package erpc

import "runtime"

// busyThread manages a busy-polling loop's hold on its OS thread.
//
// Busy polling locks the loop to its thread and spins without yielding, so
// the Go scheduler never hands the loop's work to another thread. That is
// only right while other goroutines have a P of their own to run on: with
// GOMAXPROCS = 1 (one core, or a process pinned to one CPU, which Go notices
// and follows) a locked spinning loop would starve every goroutine that
// calls Session.Call until the scheduler preempts it 10 ms later. There the
// loop unlocks and yields the processor right after it woke a goroutine (a
// blocking call's caller, a worker) and otherwise every few idle turns: a
// yield costs a trip through the scheduler's lock even when nothing else is
// runnable, too much for every turn of a sub-microsecond shared-memory poll.
type busyThread struct {
	locked bool
	shared bool // GOMAXPROCS was 1 at the last check
	woke   bool // a goroutine was made runnable since the last yield
	turns  uint32
}

const (
	// recheckEvery is how many idle turns pass between GOMAXPROCS checks.
	recheckEvery = 1024
	// yieldEvery is how many idle turns pass between yields when no
	// goroutine is known to be waiting for the processor.
	yieldEvery = 32
)

// start is called by each goroutine that takes the loop role: the first,
// and each one a handoff starts. The goroutine that had the role before
// keeps its own lock (its thread goes with it until it exits), so the new
// one starts unlocked, whatever locked says.
func (b *busyThread) start() {
	b.locked = false
	b.shared = runtime.GOMAXPROCS(0) == 1
	b.setLocked(!b.shared)
}

// idle is called on every idle turn of the spin.
func (b *busyThread) idle() {
	if b.turns++; b.turns%recheckEvery == 0 {
		b.shared = runtime.GOMAXPROCS(0) == 1
		b.setLocked(!b.shared)
	}
	if b.shared && (b.woke || b.turns%yieldEvery == 0) {
		b.woke = false
		runtime.Gosched()
	}
}

// wokeGoroutine notes that the loop made a goroutine runnable, which with
// GOMAXPROCS = 1 can only run once the loop yields.
func (b *busyThread) wokeGoroutine() { b.woke = true }

// release unlocks the thread before the loop blocks, since a locked thread
// must not block in the netpoller (every wake-up would then be handed to it
// through futexes); reacquire takes it back afterwards.
func (b *busyThread) release() { b.setLocked(false) }

func (b *busyThread) reacquire() { b.setLocked(!b.shared) }

func (b *busyThread) setLocked(lock bool) {
	switch {
	case lock && !b.locked:
		runtime.LockOSThread()
	case !lock && b.locked:
		runtime.UnlockOSThread()
	}
	b.locked = lock
}
