package erpc

import "time"

// Default spin window of the netpoller mode: it starts at minSpin and
// adapts between minSpin and maxSpin (see spinWindow).
const (
	minSpin = 50 * time.Microsecond
	maxSpin = time.Millisecond
)

// spinWindow is how long the event loop keeps polling after its last work
// before it parks. Parking is cheap while the loop is idle but costly when
// work is about to come: waking a parked thread takes tens to hundreds of
// microseconds on a virtual machine, and a loop that parks just before
// each reply pays that on every call (and, with the other side doing the
// same, settles into parking on every turn). So the window adapts, the way
// KVM's halt polling does, to the cost of a spin against a park's: a park
// that a datagram ended within the current window's length (twice the
// window would have caught it) doubles the window; a park that outlasted
// the longest window halves it (spinning would have cost more than the
// wake-up it saves); other parks leave it. A fixed window has lo == hi.
// A parked loop that Go woke late (its netpoller is polled late while
// other loops of the process keep every processor spinning) reads as a
// long park; spin_share.go keeps a processor free of spinning loops.
//
// The growth asks for the datagram to come soon after the park because
// spinning has a price that the loop does not see: a core that other
// processes wait for. Growing on any datagram a few windows after the
// park (as this window did, halving only after parks ten windows long)
// kept a loop with a request every millisecond or two polling a
// millisecond after each: in erpc-bench fleet (four replica processes and
// a client on two cores, 2,000 calls/s, 500 us Background handlers)
// every replica's window sat at 1 ms, the replicas' spins held the cores
// that the processes they waited for needed, and p50 was 7-13 ms against
// gRPC's 1.4-1.7 ms (1.6-2.0 ms against 1.3-1.4 ms with this rule; each
// pair from one run, on a shared host at load 3-12).
//
// Only a datagram grows the window: the spin is for the network's round
// trips. A park that the process's own goroutines ended (a Background
// handler's response, a new call, a posted function: a command and a
// Wake) lasted as long as the application took, which no spin shortens.
type spinWindow struct {
	cur, lo, hi time.Duration
	localWakes  int // parks the process's own work ended (a test's)
}

func newSpinWindow(lo, hi time.Duration) spinWindow {
	return spinWindow{cur: lo, lo: lo, hi: max(lo, hi)}
}

// afterPark adapts the window to a park that lasted parked: arrived tells
// whether a datagram came during it, worked whether the turn after it
// found work of any kind (a timer of the loop's own that ended the park is
// not work arriving; a command is work, but not the network's).
func (w *spinWindow) afterPark(parked time.Duration, arrived, worked bool) {
	if worked && !arrived {
		w.localWakes++
	}
	switch {
	case w.lo < 0 || w.hi == w.lo:
	case parked > w.hi:
		w.cur = max(w.cur/2, w.lo)
	case arrived && parked <= w.cur:
		w.cur = min(2*w.cur, w.hi)
	}
}
