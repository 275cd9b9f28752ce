package erpc

import (
	"testing"
	"time"
)

func TestSpinWindowAdapts(t *testing.T) {
	w := newSpinWindow(minSpin, maxSpin)
	if w.cur != minSpin {
		t.Fatalf("starts at %v, want %v", w.cur, minSpin)
	}
	// Parks that a datagram ends within the window: it doubles up to the
	// ceiling.
	want := []time.Duration{100 * time.Microsecond, 200 * time.Microsecond, 400 * time.Microsecond, 800 * time.Microsecond, maxSpin, maxSpin}
	for i, x := range want {
		w.afterPark(w.cur, true, true)
		if w.cur != x {
			t.Fatalf("after %d short parks: %v, want %v", i+1, w.cur, x)
		}
	}
	// A park that found no work (the loop's own timer), one that a
	// command ended (the process's own work), and one that a datagram
	// ended later than a doubled window would have caught, change
	// nothing while they last no longer than the ceiling.
	w.cur = 200 * time.Microsecond
	w.afterPark(10*time.Microsecond, false, false)
	w.afterPark(10*time.Microsecond, false, true)
	w.afterPark(maxSpin, false, true)
	w.afterPark(300*time.Microsecond, true, true)
	w.afterPark(maxSpin, true, true)
	if w.cur != 200*time.Microsecond {
		t.Fatalf("a timer, a command or a late datagram moved the window to %v", w.cur)
	}
	if w.localWakes != 2 {
		t.Fatalf("%d parks counted as the process's own work, want 2", w.localWakes)
	}
	// Parks longer than the ceiling, whatever ended them, halve it to the
	// floor.
	w.cur = maxSpin
	for i := range 10 {
		w.afterPark(maxSpin+time.Microsecond, i%2 == 0, i%3 == 0)
	}
	if w.cur != minSpin {
		t.Fatalf("after long parks: %v, want %v", w.cur, minSpin)
	}
}

func TestSpinWindowFixed(t *testing.T) {
	for _, d := range []time.Duration{0, 20 * time.Microsecond, -1} {
		w := newSpinWindow(d, d)
		w.afterPark(time.Microsecond, true, true)
		w.afterPark(time.Second, true, true)
		if w.cur != d {
			t.Fatalf("fixed window %v moved to %v", d, w.cur)
		}
	}
	var o options = defaultOptions()
	WithSpin(0)(&o)
	if o.spin != 0 || o.spinMax != 0 {
		t.Fatalf("WithSpin(0) leaves an adaptive window %v..%v", o.spin, o.spinMax)
	}
}
