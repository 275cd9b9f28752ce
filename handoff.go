package erpc

import (
	"runtime"
	"time"
)

// Handoff: an inline handler that blocks must not hold up the endpoint.
// Inline handlers are the fast path (no goroutine switch, the answer sent
// by the loop as the handler returns), so they stay the default; but one
// that is still running after the handoff threshold (WithHandoff) loses
// the loop, the way Go's runtime takes a P from a goroutine blocked in a
// system call: the watchdog takes the loop role from the goroutine stuck
// in the handler and starts a fresh goroutine that goes on with the loop's
// turns. The stuck handler finishes as a Background handler would: its
// answer goes through the command queue, and its goroutine, once the
// handler returns, releases the run's reference to the request and exits.
//
// Who holds the loop is decided on the request's state word, with no
// extra atomic on the hot path: the loop sets phInline before the handler
// runs and clears it when the handler returns (one atomic each, which it
// did before handoff existed); the watchdog takes the loop by clearing
// phInline with a compare-and-swap while the handler runs. Whoever clears
// the bit first wins: the loop, which then goes on as before, or the
// watchdog, after which the old goroutine never touches loop state again
// (see turns for the invariant that makes that safe, and runInline for
// how the old goroutine leaves).

// defaultHandoff is the default handoff threshold. A handler is handed off
// once the watchdog has seen the same run at two checks, which it makes
// every threshold while the loop is awake: so a handler that returns
// within the threshold never is, and one that blocks is handed off after
// one to two thresholds (plus the timer's lateness: Go's timers are
// precise while the process has other work, and fire within a millisecond
// or so when it has none). 100 us is about ten round trips of a short
// call over UDP loopback (p50 7-10 us where this was measured), so a
// blocked handler costs the endpoint's other sessions about that once per
// blocking request; a handler doing 100 us of work is long enough that a
// goroutine start (about a microsecond) is noise beside it; and a check
// every 100 us, made only while a serving endpoint's loop is awake, left
// erpc-bench's latency p50 and rate within the host's noise of the code
// before handoff (issue 29's runs; the same checks on client endpoints,
// which have no handler to hand off, cost the rate scenario's client
// 7-27 % of its calls per second in three runs, so those run none).
const defaultHandoff = 100 * time.Microsecond

// WithHandoff sets how long an inline handler may run before the endpoint
// hands its event loop to a fresh goroutine and lets the handler finish
// off the loop, as a Background handler. Default (and 0) 100 us; a
// negative value turns handoff off (an inline handler then holds the loop
// until it returns, however long; a blocking Call, Dial or Shutdown it
// makes still hands the loop off first, since the loop could never answer
// it otherwise). A handler that ends its goroutine (runtime.Goexit) gets
// an Internal answer, and the loop goes on on a fresh goroutine.
//
// A handed-off handler runs beside the loop's next handlers, so one
// session's requests may then be handled out of their arrival order (a
// handler preempted by the OS for 100 us is enough). A handler that needs
// arrival order, such as one that feeds a log or a pipeline, registers
// with OnLoop, which is never handed off (contrib/raft does).
//
// A handoff costs a few allocations (the loop's new goroutine and its
// stack, about five per handed-off call when every call is): the
// promise that a call allocates nothing in steady state is for calls
// whose handlers return within the threshold, or run OnLoop.
func WithHandoff(d time.Duration) Option {
	if d == 0 {
		d = defaultHandoff
	}
	return func(o *options) { o.handoff = d }
}

// watchLoop is the endpoint's watchdog, a goroutine of its own: while the
// loop is awake it checks, every handoff threshold, whether an inline
// handler has held the loop since the last check (and hands the loop off
// if so), and every half stall threshold whether to log a stall. While
// the loop sleeps in its transport nothing can hold it, and the watchdog
// sleeps too until the loop wakes (loopAwake), so an idle endpoint costs
// no timer wake-ups.
func (ep *Endpoint) watchLoop() {
	every := ep.opts.handoff
	if half := ep.opts.stall / 2; every <= 0 || half > 0 && half < every {
		every = half
	}
	if ep.opts.handoff > 0 {
		ep.watch.checksPerHandoff = int((ep.opts.handoff + every - 1) / every)
	}
	// The stall check goes by the clock, not by counting ticks: an idle
	// process's timers fire up to a millisecond late, so 5000 ticks of
	// 100 us can take seconds.
	nextStallCheck := ep.now().Add(ep.opts.stall / 2)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ep.loopDone:
			return
		case <-t.C:
		}
		if ep.opts.handoff > 0 {
			ep.checkHandoff()
		}
		if ep.opts.stall > 0 {
			if now := ep.now(); now >= nextStallCheck {
				nextStallCheck = now.Add(ep.opts.stall / 2)
				ep.checkStall()
			}
		}
		if !ep.waitAwake() {
			return
		}
		t.Reset(every)
	}
}

// waitAwake returns at once while the loop is awake, and otherwise when
// it wakes; false once the loop has stopped.
func (ep *Endpoint) waitAwake() bool {
	w := &ep.watch
	if !ep.sleeping.Load() {
		return true
	}
	w.parked.Store(true)
	// Checked again after publishing parked: the loop, waking, sees
	// parked, or this sees it awake.
	if !ep.sleeping.Load() && w.parked.CompareAndSwap(true, false) {
		return true
	}
	select {
	case <-w.wake: // the loop cleared parked and sent this
		return true
	case <-ep.loopDone:
		return false
	}
}

// loopAwake wakes the watchdog if it sleeps (on the loop, after a sleep).
func (w *loopWatch) loopAwake() {
	if w.parked.Load() && w.parked.CompareAndSwap(true, false) {
		w.wake <- struct{}{} // never blocks: the watchdog takes each token before it parks again
	}
}

// checkHandoff hands the loop off if an inline run it saw at least the
// handoff threshold ago is still going (on the watchdog).
func (ep *Endpoint) checkHandoff() {
	w := &ep.watch
	r := w.inline.Load()
	if r == nil {
		return
	}
	s := r.state.Load()
	if s&phInline == 0 {
		w.seen = nil
		return
	}
	if gen := s >> genShift; r != w.seen || gen != w.seenGen {
		w.seen, w.seenGen, w.seenChecks = r, gen, 0 // a run not seen before
		return
	}
	// Checks are at least every apart (the timer is reset after each), so
	// a run seen again k checks later has lasted at least k*every.
	if w.seenChecks++; w.seenChecks < w.checksPerHandoff {
		return
	}
	w.seen = nil
	ep.handOff(r, w.seenGen)
}

// handOff takes the loop from the goroutine running r's handler inline,
// if that run (generation gen) is still going, and starts a goroutine
// that goes on with the loop. The old goroutine is adopted by the worker
// pool first (it becomes a Background handler, which Close and Shutdown
// wait for), so that it cannot leave the pool before it joined.
func (ep *Endpoint) handOff(r *request, gen uint64) bool {
	ep.watch.handing.Lock()
	defer ep.watch.handing.Unlock()
	return ep.handOffLocked(r, gen)
}

// handOffLocked is handOff with watch.handing held: one handoff at a time,
// whether the watchdog's or a handler's own (blockingRefused), and none
// while blockingRefused looks at who holds the loop.
func (ep *Endpoint) handOffLocked(r *request, gen uint64) bool {
	old := ep.watch.gid.Load()
	if !ep.workers.adopt(old) {
		return false // stopping: the loop finishes its handler
	}
	var s uint64
	for {
		s = r.state.Load()
		if s>>genShift != gen || s&phInline == 0 {
			ep.workers.leave(old) // the loop won: the handler returned
			ep.watch.handoffsLost.Add(1)
			return false
		}
		if r.state.CompareAndSwap(s, s&^phInline) {
			break
		}
	}
	// The old goroutine no longer holds the loop. It may be in the middle
	// of a pinned section (pinLoop, or a call it starts directly:
	// startOnLoop): that ends before the next owner runs.
	ep.watch.setLoop(0)
	for ep.watch.pin.Load() == old || ep.watch.pinG.Load() != 0 {
		runtime.Gosched()
	}
	if s&phAnswered != 0 {
		// Answered inline before the handoff: the loop would have sent
		// it when the handler returned; the queue takes it now.
		ep.post(command{kind: cmdRespond, req: r})
	}
	ep.watch.handoffs.Add(1)
	go ep.resume()
	return true
}

// resume goes on with the loop on a fresh goroutine after a handoff.
// Everything the old owner wrote before its handler started is visible
// here: it set phInline after, handOff read that with its compare-and-swap
// and then started this goroutine.
func (ep *Endpoint) resume() {
	ep.watch.setLoop(goroutineID())
	ep.watch.leaveUser() // the old owner's turn ended with its handler
	ep.turns()
}

// leaveHandedOff ends the goroutine of a handler that lost the loop while
// it ran (the handler has returned): the request's run reference is
// dropped as a Background handler's is, and the goroutine exits through
// runtime.Goexit without returning into the loop's code, which is another
// goroutine's now. The loop's stack holds no deferred call (see turns),
// so nothing of the loop's runs on the way out. A busy-polling loop had
// locked this goroutine to its thread; that lock ends here, so the
// thread goes back to the runtime's pool.
func (ep *Endpoint) leaveHandedOff(r *request) {
	ep.leftLoop(r)
	runtime.Goexit()
}

// leftLoop drops the run reference of r, whose handler lost the loop, as a
// Background handler's is dropped, and takes its goroutine out of the
// pool and off a busy-polling loop's thread.
func (ep *Endpoint) leftLoop(r *request) {
	r.release(false)
	ep.workers.leave(goroutineID())
	runtime.UnlockOSThread()
}

// pinLoop reports whether the caller is the endpoint's loop running user
// code, and if so keeps it the loop, with no handoff, until unpinLoop: user
// code on the loop that touches loop state directly (Stats, Session.Close)
// does it pinned, since an inline handler may otherwise lose the loop
// while it does. The pin names its goroutine, so that a goroutine that
// lost the loop before it pinned cannot unpin the new owner.
func (ep *Endpoint) pinLoop() (gid uint64, ok bool) {
	if ep.watch.since.Load() < 0 {
		return 0, false
	}
	g := goroutineID()
	if g != ep.watch.gid.Load() {
		return 0, false
	}
	for !ep.watch.pin.CompareAndSwap(0, g) {
		runtime.Gosched() // a goroutine that has just lost the loop lets go at once
	}
	if g == ep.watch.gid.Load() { // handOff clears gid before it waits for the pin
		return g, true
	}
	ep.watch.pin.Store(0)
	return 0, false
}

func (ep *Endpoint) unpinLoop(gid uint64) { ep.watch.pin.CompareAndSwap(gid, 0) }

// blockingRefused is asked by a blocking operation (Call, Dial, Shutdown)
// before it waits for the loop. It reports true if the caller is the loop
// and must not wait for itself: a continuation, a Post function or an
// OnLoop handler. An inline handler asking is not refused: it hands the
// loop off first, here, and waits as a Background handler does. Off the
// loop it is one atomic load while the loop runs no user code.
func (ep *Endpoint) blockingRefused() bool {
	if ep.watch.since.Load() < 0 {
		return false
	}
	g := goroutineID()
	if g != ep.watch.gid.Load() {
		return false
	}
	ep.watch.handing.Lock()
	defer ep.watch.handing.Unlock()
	// With handing held no handoff is under way, so gid and the inline
	// run's phInline say where the caller is.
	if g != ep.watch.gid.Load() {
		return false // the watchdog handed it off just now
	}
	r := ep.watch.inline.Load()
	if r == nil {
		return true // an OnLoop handler, or no inline run yet
	}
	s := r.state.Load()
	if s&phInline == 0 {
		return true // not in an inline handler: a continuation or Post function
	}
	return !ep.handOffLocked(r, s>>genShift)
}
