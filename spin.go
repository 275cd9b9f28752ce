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
// same, settles into parking on every turn). So the window adapts the way
// KVM's halt polling does: a park that ended in work sooner than the
// longest window would have been caught by spinning longer, so the window
// doubles; a park ten times longer than the longest window means the loop
// was really idle, so the window halves. In between the window stays: on
// a processor that other loops of the process keep busy spinning, Go does
// not poll the netpoller (see WithSpin), so a parked loop may notice its
// datagram a millisecond or more late, which is not idleness. A fixed
// window has lo == hi.
type spinWindow struct {
	cur, lo, hi time.Duration
}

// idleParkFactor times the longest window is a park that means idleness.
const idleParkFactor = 10

func newSpinWindow(lo, hi time.Duration) spinWindow {
	return spinWindow{cur: lo, lo: lo, hi: max(lo, hi)}
}

// afterPark adapts the window to a park that lasted parked; worked tells
// whether the turn after it found work (a timer of the loop's own that
// ended the park is not work arriving).
func (w *spinWindow) afterPark(parked time.Duration, worked bool) {
	switch {
	case w.lo < 0 || w.hi == w.lo:
	case parked >= idleParkFactor*w.hi:
		w.cur = max(w.cur/2, w.lo)
	case worked:
		w.cur = min(2*w.cur, w.hi)
	}
}
