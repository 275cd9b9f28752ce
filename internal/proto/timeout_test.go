package proto

import (
	"testing"
	"time"
)

// A floor raised by a spurious timeout gives back half of its rise every
// floorHalfLife while replies come, down to where it started, so one stall
// does not slow a session's loss recovery for the rest of its life.
func TestRelaxFloor(t *testing.T) {
	start := Time(time.Second)
	for _, c := range []struct {
		base, raised time.Duration
		after        []time.Duration // times of replies since the rise
		want         []time.Duration // the floor after each
	}{
		{0, 6 * time.Millisecond,
			[]time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second},
			[]time.Duration{6 * time.Millisecond, 3 * time.Millisecond, 3 * time.Millisecond, 1500 * time.Microsecond}},
		{5 * time.Millisecond, 9 * time.Millisecond, // a same-host session: back toward 5 ms, not below
			[]time.Duration{10 * time.Second, 20 * time.Second},
			[]time.Duration{7 * time.Millisecond, 6 * time.Millisecond}},
		{5 * time.Millisecond, 5 * time.Millisecond, // never raised: nothing moves
			[]time.Duration{time.Minute},
			[]time.Duration{5 * time.Millisecond}},
	} {
		cs := &clientSide{floorBase: c.base, rtoFloor: c.raised, floorAt: start}
		for i, d := range c.after {
			cs.relaxFloor(start.Add(d))
			if cs.rtoFloor != c.want[i] {
				t.Fatalf("base %v raised to %v: after %v the floor is %v, want %v", c.base, c.raised, d, cs.rtoFloor, c.want[i])
			}
		}
	}
}
