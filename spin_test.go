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
	// Parks that work ends soon: the window doubles up to the ceiling.
	want := []time.Duration{100 * time.Microsecond, 200 * time.Microsecond, 400 * time.Microsecond, 800 * time.Microsecond, maxSpin, maxSpin}
	for i, x := range want {
		w.afterPark(300*time.Microsecond, true)
		if w.cur != x {
			t.Fatalf("after %d short parks: %v, want %v", i+1, w.cur, x)
		}
	}
	// A short park that found no work (the loop's own timer) changes
	// nothing, nor does a park a few windows long (maybe a late wake-up).
	w.afterPark(10*time.Microsecond, false)
	w.afterPark(3*maxSpin, true)
	if w.cur != maxSpin {
		t.Fatalf("a timer or late wake-up moved the window to %v", w.cur)
	}
	// Idle parks, with or without work after them, halve it to the floor.
	for range 10 {
		w.afterPark(idleParkFactor*maxSpin, true)
	}
	if w.cur != minSpin {
		t.Fatalf("after idle parks: %v, want %v", w.cur, minSpin)
	}
}

func TestSpinWindowFixed(t *testing.T) {
	for _, d := range []time.Duration{0, 20 * time.Microsecond, -1} {
		w := newSpinWindow(d, d)
		w.afterPark(time.Microsecond, true)
		w.afterPark(time.Second, true)
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
