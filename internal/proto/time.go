package proto

import (
	"math"
	"time"
)

// Time is a point on the caller's monotonic clock, in nanoseconds from an
// arbitrary origin. The engine never reads a clock: every entry point takes
// the current Time, which is what makes it testable with a fake clock.
type Time int64

// Never is a deadline that does not come.
const Never Time = math.MaxInt64

// Add returns t+d, saturating at Never.
func (t Time) Add(d time.Duration) Time {
	if t == Never || d >= time.Duration(Never-t) {
		return Never
	}
	return t + Time(d)
}

// Sub returns t-u as a duration.
func (t Time) Sub(u Time) time.Duration { return time.Duration(t - u) }

func minTime(a, b Time) Time {
	if a < b {
		return a
	}
	return b
}

func maxTime(a, b Time) Time {
	if a > b {
		return a
	}
	return b
}
