package erpc

import (
	"context"
	"net/netip"
	"runtime"
	"time"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/seal"
	"github.com/erpc-go/erpc/transport"
)

// loopState is the part of an Endpoint only its event loop touches.
type loopState struct {
	sessions   map[proto.SessionID]*Session  // client sessions by engine ID
	peerAuths  map[proto.SessionID]*PeerAuth // server sessions' peers, where known (peerauth.go); nil until one is
	reqFree    []*request
	respHint   []int // per handler: its last response built in response memory
	ctxSlab    ctxSlab
	msgs       []transport.Message
	gone       []netip.AddrPort
	now        proto.Time
	onDatagram func(from netip.AddrPort, data []byte) // bound once: no allocation per batch
	poller     transport.Poller                       // nil unless the transport has a check the loop uses (pollerOf)
	// pollReadsClock: a poll that found work may have lasted long
	// enough that the turn after it reads the clock again (pollerOf).
	pollReadsClock bool
	watcher        transport.PeerWatcher // nil unless the transport reports gone peers
	idleCheck      func() bool           // bound once, for poller
	stopped        bool
	yielded        proto.Time // when the loop last let other goroutines run (shareCPU)
	thread         busyThread // busy polling only
	spin           spinWindow
	shortParks     int // parks for a deadline or an answer due within parkResolution (see sleep)
	directCalls    int // calls user code on the loop started without the queue (startOnLoop; a test's)
	deadlineSpins  int // idle turns spent waiting for such a deadline or answer
	mem            memRelease
	// The command batch runCommands is running, and the index of the
	// next command in it (goexitOnLoop requeues the rest).
	batch     []command
	batchNext int
	share     spinShare // spin_share.go
	// Shutdown's drain: when it told the clients, and when it last
	// refused a request (endpoint.go, drainQuiet).
	drainedAt, lastRefusal proto.Time
}

func (l *loopState) init(handlers *handlerTable) {
	l.sessions = make(map[proto.SessionID]*Session)
	if handlers != nil {
		l.respHint = make([]int, handlers.n)
	}
}

// run is the event loop: receive a batch, dispatch events and queued
// commands until both are quiet, send, run the timers, and sleep when
// idle.
func (ep *Endpoint) run() {
	ep.watch.setLoop(goroutineID())
	switch {
	case ep.sec != nil:
		ep.loop.onDatagram = ep.tlsReceive
	default:
		ep.loop.onDatagram = func(from netip.AddrPort, data []byte) {
			if seal.IsSealed(data) { // a TLS client: tell it this endpoint does not speak TLS
				ep.plainRefuseTLS(from, data)
				return
			}
			ep.eng.Receive(ep.loop.now, from, data)
		}
	}
	ep.loop.spin = newSpinWindow(ep.opts.spin, ep.opts.spinMax)
	ep.loop.share.limit = spinLimit()
	ep.loop.poller, ep.loop.pollReadsClock = pollerOf(ep.tr, ep.opts.busyPoll)
	ep.loop.watcher, _ = ep.tr.(transport.PeerWatcher)
	ep.loop.idleCheck = func() bool {
		// Commands to run, or (with GOMAXPROCS 1) a goroutine the loop
		// woke that can run only once the loop yields.
		return ep.cmds.n.Load() > 0 || (ep.loop.thread.shared && ep.loop.thread.woke)
	}
	ep.turns()
}

// turns runs the loop's turns until it stops, on whichever goroutine holds
// the loop: the first one (run), or one a handoff started (resume).
//
// Handoff invariant: nothing on the stack from here down to an inline
// handler (process, flush, dispatchEvents, serve, runInline) defers a call
// or keeps loop state in a local that the next turn needs. A goroutine
// whose handler was handed off leaves through runtime.Goexit from
// runInline, so the rest of its batch stays where the next owner finds it
// (engine events in the engine, commands in the queue, packets in the
// engine's outgoing list), and no deferred call of the old owner touches
// the loop. So no defer here either: the owner that stops the loop
// releases its thread and closes loopDone.
func (ep *Endpoint) turns() {
	if ep.opts.busyPoll {
		ep.loop.thread.start()
	}
	idleSince := ep.now()
	parked := time.Duration(-1) // the last park, until the turn after it
	polled := false             // the last turn was idle and its poll found work
	for {
		now := ep.loop.now
		if !polled || ep.loop.pollReadsClock {
			now = ep.now()
		}
		polled = false
		ep.loop.now = now
		n, err := ep.tr.Receive(ep.loop.onDatagram)
		if ep.sec != nil && len(ep.sec.starting) > 0 {
			ep.tlsStartSteps() // the handshake packets of the batch, off the loop
		}
		if err != nil {
			ep.log.Error("erpc: transport failed; closing endpoint", "err", err)
			ep.closeErr = err
			ep.loop.stopped = true
		}
		ep.checkPeers(now)
		worked := ep.process(now) || n > 0
		if parked >= 0 {
			ep.loop.spin.afterPark(parked, n > 0, worked)
			parked = -1
		}
		ep.flush(now)
		// The timers after the turn's packets left: their bookkeeping
		// (a deadline per session the turn touched) is off the path of
		// a reply, and every deadline the turn set is later than now, so
		// none is missed. What they send goes at once; what they report
		// makes the turn a working one, handled by the next.
		ep.eng.Tick(now)
		ep.noteRelease(now)
		if ep.flush(now) || ep.eng.HasEvents() {
			worked = true
		}
		if ep.loop.stopped {
			ep.stopSpin()
			ep.stop(now)
			break
		}
		if worked {
			ep.stopSpin()
			idleSince = now
			ep.shareCPU(now)
			continue
		}
		if spin := ep.loop.spin.cur; spin < 0 || (now.Sub(idleSince) < spin && ep.maySpin(now)) {
			polled = ep.idle()
			ep.noteIdleTurn(polled)
			continue
		}
		next := ep.eng.NextDeadline()
		if ep.tooSoonToPark(now, next) {
			ep.loop.deadlineSpins++
			polled = ep.idle()
			continue
		}
		ep.stopSpin()
		ep.sleep(now, next)
		idleSince = ep.now()
		parked = idleSince.Sub(now)
	}
	if ep.opts.busyPoll {
		ep.loop.thread.release()
	}
	ep.watch.g.Store(0) // no call starts directly from here on (startOnLoop)
	close(ep.loopDone)
}

// parkResolution is the shortest park worth taking: a loop whose next
// deadline is closer keeps spinning (yielding between turns) until it.
// Go's netpoller sleeps in whole milliseconds (a deadline 100 us away
// waits 1 ms), and a virtual machine's wake-up adds to that. The pacer's
// gaps are shorter: in erpc-bench's 16-sender incast, a sender whose loop
// parked between its paced packets sent one every 1.4 ms (7 Mbit/s, on a
// 500 Mbit/s bottleneck the others had left) for a quarter of a second,
// in about one run in ten. A deadline that close is work the loop knows
// of, so the spin costs no more than the default spin window does.
const parkResolution = time.Millisecond

// tooSoonToPark reports whether a park now would overshoot: the engine's
// next deadline (next) is less than parkResolution away, or an answer is
// due (answerDue).
func (ep *Endpoint) tooSoonToPark(now, next proto.Time) bool {
	return (next != proto.Never && next.Sub(now) < parkResolution) || ep.answerDue(now)
}

// answerDue reports whether a request's packet left less than
// parkResolution ago: its answer is due within about an RTT, and a loop
// parked then would time the answer's arrival only when it woke, adding
// its wake-up (0.2-0.6 ms on the VM this was measured on) to the RTT
// sample. Congestion control reads that as a queue: in erpc-bench's
// incast a session paced below one packet parked between its packets, and
// every sample it took (200-600 us on a 25 us path) held its window at
// the floor, a packet every few milliseconds, for up to a second.
func (ep *Endpoint) answerDue(now proto.Time) bool {
	t := ep.eng.LastTransmit()
	return t != proto.Never && now.Sub(t) < parkResolution
}

// workYield is the longest the default-mode loop works without letting
// the process's other goroutines run. Go preempts a goroutine that never
// yields only after 10 ms, and while it runs, goroutines that its process
// has made ready wait: with GOMAXPROCS=1 (a 1-CPU container, or
// erpc-bench's client), an endpoint whose loop had work every turn kept
// the loops of the process's other endpoints from running for 4-5 ms. In
// erpc-bench's 16-sender incast one sender then had the bottleneck to
// itself: Jain's index of the first 10 ms fell to 0.34-0.84.
const workYield = 20 * time.Microsecond

// shareCPU yields, in the default mode, after a working turn that ends
// workYield or more after the loop last yielded. A busy-polling loop owns
// its thread and does not (busyThread decides when it gives its P back).
func (ep *Endpoint) shareCPU(now proto.Time) {
	if ep.opts.busyPoll || now.Sub(ep.loop.yielded) < workYield {
		return
	}
	ep.loop.yielded = now
	runtime.Gosched()
}

// pollChecks is how many cheap checks a Poller makes between two turns of
// an idle loop: enough to keep a turn's fixed costs (a clock read, the
// transport's and the engine's bookkeeping) off the spin, few enough that
// timers and the spin window still see the clock every microsecond or so.
// A SyscallPoller makes fewer (udp: 8, about 10 us).
const pollChecks = 64

// pollerOf is the transport's Poller as the loop uses it. A poll whose
// checks are loads of shared memory (shm) lasts a microsecond or so, and
// the turn after one that found work keeps the clock it read before: on
// that path a clock read is a few percent of a round trip, and such a
// transport is Reliable, whose sessions take no RTT samples. A poll whose
// checks are system calls (udp, SyscallPoller) is for a busy-polling loop
// only (a default-mode loop yields between turns instead, as other
// goroutines may be waiting for the processor), and the turn after it
// reads the clock again.
func pollerOf(tr transport.Transport, busy bool) (p transport.Poller, readsClock bool) {
	p, _ = tr.(transport.Poller)
	if _, sys := tr.(transport.SyscallPoller); sys {
		if !busy {
			return nil, false
		}
		return p, true
	}
	return p, false
}

// idle spends one idle turn: a poll of the transport where it has a cheap
// check, then a yield.
func (ep *Endpoint) idle() (found bool) {
	if ep.loop.poller != nil && ep.loop.poller.Poll(pollChecks, ep.loop.idleCheck) {
		return true
	}
	ep.yield()
	return false
}

// yield lets other goroutines run between two idle checks: in the default
// mode always, in busy polling where busyThread says so.
func (ep *Endpoint) yield() {
	if ep.opts.busyPoll {
		ep.loop.thread.idle()
	} else {
		runtime.Gosched()
	}
}

// checkPeers ends the sessions of peers the transport saw go away.
func (ep *Endpoint) checkPeers(now proto.Time) {
	if ep.loop.watcher == nil {
		return
	}
	ep.loop.gone = ep.loop.watcher.GonePeers(ep.loop.gone[:0])
	for _, a := range ep.loop.gone {
		ep.eng.PeerGone(now, a)
	}
}

// process dispatches engine events and runs queued commands until neither
// produces more work. This is where user code runs: handlers,
// continuations, posted functions.
func (ep *Endpoint) process(now proto.Time) (worked bool) {
	if !ep.eng.HasEvents() && ep.cmds.n.Load() <= 0 {
		return false // an idle turn: no user code, no stall watch to set
	}
	ep.watch.enterUser(now)
	for range 64 {
		e := ep.dispatchEvents(now)
		c := ep.runCommands(now)
		if !e && !c {
			break
		}
		worked = true
	}
	ep.watch.leaveUser() // not deferred: see turns
	return worked
}

// sleep parks the loop in the transport until a datagram, the engine's next
// deadline (next), or a Wake from a goroutine that posted a command.
func (ep *Endpoint) sleep(now, next proto.Time) {
	if ep.tooSoonToPark(now, next) {
		ep.loop.shortParks++ // never while run checks first (the count is a test's)
	}
	deadline := ep.wallTime(next)
	ep.sleeping.Store(true)
	if ep.cmds.n.Load() <= 0 { // checked after publishing sleeping: a poster sees one or the other
		if ep.opts.busyPoll {
			ep.loop.thread.release()
		}
		err := ep.tr.Wait(deadline)
		if ep.opts.busyPoll {
			ep.loop.thread.reacquire()
		}
		if err != nil && ep.closeErr == nil && ep.state.Load() != stateClosed {
			ep.log.Error("erpc: transport wait failed; closing endpoint", "err", err)
			ep.closeErr = err
			ep.loop.stopped = true
		}
	}
	ep.sleeping.Store(false)
	ep.watch.loopAwake()
}

// flush sends what the engine has to send. Commands posted meanwhile run
// first: a call's cancel withdraws the call's packets before they are
// read, which is what lets a canceled Call return while the loop is busy.
func (ep *Endpoint) flush(now proto.Time) (sent bool) {
	if ep.cmds.n.Load() > 0 {
		ep.process(now)
	}
	pkts := ep.eng.Outgoing(now)
	if len(pkts) == 0 && len(ep.extra) == 0 {
		return false
	}
	msgs := ep.loop.msgs[:0]
	if ep.sec != nil {
		msgs = ep.tlsSeal(now, pkts, msgs)
	} else {
		for i := range pkts {
			p := &pkts[i]
			msgs = append(msgs, transport.Message{To: p.To, Head: p.Head(), Payload: p.Payload, Path: p.Path})
		}
	}
	if len(ep.extra) > 0 { // handshakes and refusals, ahead of what they make way for
		msgs = append(ep.extra, msgs...)
		ep.extra = nil
	}
	if err := ep.tr.Send(msgs); err != nil && err != transport.ErrTooLarge {
		if ep.closeErr == nil && ep.state.Load() != stateClosed {
			ep.log.Error("erpc: transport send failed; closing endpoint", "err", err)
			ep.closeErr = err
		}
		ep.loop.stopped = true
	}
	clear(msgs)
	ep.loop.msgs = msgs[:0]
	return true
}

// dispatchEvents handles what the engine reported.
func (ep *Endpoint) dispatchEvents(now proto.Time) (any bool) {
	for ev := ep.eng.TakeEvent(); ev != nil; ev = ep.eng.TakeEvent() { // in place: valid until the next

		any = true
		switch ev.Type {
		case proto.EventResponse:
			ep.completeCall(now, ev)
		case proto.EventRequest:
			ep.serve(now, ev.Req)
		case proto.EventRequestCanceled:
			if r, ok := ev.Req.Tag().(*request); ok {
				r.end(context.Canceled)
			}
		case proto.EventSessionUp:
			if s := ep.loop.sessions[ev.Session]; s != nil {
				ep.sessionOpened(*ev, s, false)
				s.onUp()
			}
			ep.sessionEvent(*ev, true, false)
		case proto.EventDraining:
			if s := ep.loop.sessions[ev.Session]; s != nil {
				s.draining.Store(true)
				s.notifyWatch()
			}
		case proto.EventSessionAccepted:
			if ep.sec != nil {
				ep.sec.sessionUp(ev.SessionTag)
			}
			ep.sessionOpened(*ev, nil, true)
			ep.sessionEvent(*ev, true, true)
		case proto.EventSessionDown:
			if ep.sec != nil {
				ep.sec.sessionDown(now, ev.SessionTag)
			}
			s := ep.loop.sessions[ev.Session]
			if s != nil {
				delete(ep.loop.sessions, ev.Session)
				s.onDown(now, ev.Err)
			}
			if ev.Server {
				delete(ep.loop.peerAuths, ev.Session)
			}
			ep.sessionEvent(*ev, false, ev.Server)
		}
	}
	return any
}

// runCommands runs what other goroutines (and handlers) posted.
func (ep *Endpoint) runCommands(now proto.Time) (any bool) {
	cmds := ep.cmds.take()
	if len(cmds) == 0 {
		return false
	}
	// The batch is the loop's state while it runs: a continuation or Post
	// function that ends the loop's goroutine leaves the rest of it to
	// the next owner (goexitOnLoop).
	ep.loop.batch = cmds
	for i := range cmds {
		ep.loop.batchNext = i + 1
		c := &cmds[i]
		switch c.kind {
		case cmdCall:
			if c.call.statsDue {
				ep.beginCallOnLoop(c.call)
			}
			if c.call.state.CompareAndSwap(callQueued, callTaken) || c.call.cont != nil {
				ep.startCall(now, c.call)
			} else {
				putCall(c.call) // withdrawn by its caller
			}
		case cmdCancel:
			if c.call.engID != 0 {
				ep.eng.Cancel(now, c.call.sid, c.call.engID)
			}
		case cmdRespond:
			ep.sendAnswer(now, c.req)
		case cmdDial:
			c.sess.connect(now)
		case cmdCloseSess:
			c.sess.closeOnLoop(now)
			c.fn()
		case cmdFunc:
			ep.runPosted(c.fn)
		case cmdStop:
			ep.loop.stopped = true
		case cmdContinue:
			ep.finishOnLoop(c.call, c.call.resp, c.call.err)
		}
	}
	ep.loop.batch = nil
	ep.cmds.recycle(cmds)
	return true
}

// stop ends the loop. Nothing it waits for needs the loop: the command
// queue closes first, so a background handler that makes a call or
// answers meanwhile is failed or dropped at once, then the workers are
// awaited, then the transport closes.
func (ep *Endpoint) stop(now proto.Time) {
	ep.state.Store(stateClosed)
	for _, s := range ep.loop.sessions {
		s.closed.Store(true)
	}
	ep.eng.CloseAll(now) // calls fail; running handlers see their context canceled
	ep.process(now)
	ep.flush(now)
	ep.failQueued(ep.cmds.close())
	ep.workers.stop() // Close waits for the handlers still running
	if ep.sec != nil {
		ep.sec.closeAll()
	}
	if err := ep.tr.Close(); err != nil && ep.closeErr == nil {
		ep.closeErr = err
	}
}
