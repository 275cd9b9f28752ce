package erpc

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
)

// loopWatch is what other goroutines may know of the event loop: whether
// it is running user code (handlers, continuations, posted functions),
// since when and which, and which goroutine it is. With it, a blocking
// call made on the loop itself fails at once instead of waiting forever,
// and a loop held up by one handler is logged.
type loopWatch struct {
	gid atomic.Uint64
	// g is the loop goroutine's loopG (0: none, or no loopG on this
	// platform), set and cleared with gid (setLoop); pinG is the loopG of
	// a loop starting a call directly (startOnLoop), which a handoff
	// waits out as it waits out pin.
	g, pinG atomic.Uintptr
	since   atomic.Int64            // engine time the loop entered user code; -1 when it is not in it
	what    atomic.Pointer[handler] // the user code running, or the turn's last to run
	cur     *handler                // what, as the loop last stored it (the loop's own copy)
	logged  atomic.Int64            // the since of the last stall logged

	// Handoff (see handoff.go). inline is the request whose handler the
	// loop runs inline, or ran last: stored before each inline run.
	inline   atomic.Pointer[request]
	pin      atomic.Uint64 // the goroutine ID of a loop in a pinned section (pinLoop), or 0
	handoffs atomic.Int64  // handoffs so far
	// handoffsLost counts handoffs that found the handler returned (the
	// loop won the race): for tests.
	handoffsLost atomic.Int64
	handing      sync.Mutex  // held by a handoff (handOff) and by blockingRefused
	parked       atomic.Bool // the watchdog waits for the loop to wake (waitAwake)
	wake         chan struct{}
	// The watchdog's own: the inline run it saw at its last check, and at
	// how many checks since it first saw it; a run seen at
	// checksPerHandoff checks after the first is handed off.
	seen             *request
	seenGen          uint64
	seenChecks       int
	checksPerHandoff int
}

func (w *loopWatch) init() {
	w.since.Store(-1)
	w.logged.Store(-1)
	w.wake = make(chan struct{}, 1)
}

// setLoop records the goroutine gid as the loop's (0: no goroutine is,
// during a handoff). A non-zero gid must be the caller's own.
func (w *loopWatch) setLoop(gid uint64) {
	g := uintptr(0)
	if gid != 0 {
		g = loopG()
	}
	w.gid.Store(gid)
	w.g.Store(g)
}

// continuationHandler names continuations and posted functions in logs.
var continuationHandler = &handler{name: "a Session.Go continuation or Post function"}

// enterUser and leaveUser bracket the loop's user code of one turn.
func (w *loopWatch) enterUser(now proto.Time) { w.since.Store(int64(now)) }
func (w *loopWatch) leaveUser() {
	w.since.Store(-1)
	w.running(nil)
}

// running names the user code the loop is about to run. Between two
// pieces of user code of one turn the loop runs only its own short work,
// so the name stays until the next one or the end of the turn; and it is
// stored only when it changes: a turn of 64 continuations makes one
// atomic store, not 128.
func (w *loopWatch) running(h *handler) {
	if w.cur != h {
		w.cur = h
		w.what.Store(h)
	}
}

// onLoop reports whether the calling goroutine is the endpoint's loop,
// running user code. The check is one atomic load unless the loop is in
// user code right now; then it reads the goroutine's ID from its stack,
// a few microseconds.
func (ep *Endpoint) onLoop() bool {
	if ep.watch.since.Load() < 0 {
		return false
	}
	return goroutineID() == ep.watch.gid.Load()
}

// checkStall logs, once per stall, a loop held by one piece of user code
// for longer than the stall threshold.
func (ep *Endpoint) checkStall() {
	since := ep.watch.since.Load()
	if ep.opts.stall < 0 || since < 0 {
		return
	}
	held := time.Duration(int64(ep.now()) - since)
	if held < ep.opts.stall || ep.watch.logged.Swap(since) == since {
		return
	}
	what, method := "a handler", ""
	if h := ep.watch.what.Load(); h != nil {
		what, method = fmt.Sprintf("the handler of %q", h.name), h.name
		if h == continuationHandler {
			what, method = h.name, ""
		}
	}
	ep.log.Warn(fmt.Sprintf("erpc: %s has held the endpoint's event loop for %v; every call and request of the endpoint "+
		"waits meanwhile. Blocking work belongs in a Background handler; a call made from the loop in Session.Go.",
		what, held.Round(time.Millisecond)), "method", method, "held", held)
}

// goroutineID is the calling goroutine's ID, from the first line of its
// stack trace ("goroutine 18 [running]:").
func goroutineID() uint64 {
	var buf [32]byte
	n := runtime.Stack(buf[:], false)
	var id uint64
	for _, c := range buf[len("goroutine "):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
