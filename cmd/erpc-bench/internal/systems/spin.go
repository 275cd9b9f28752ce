package systems

import (
	"math"
	"time"

	"github.com/erpc-go/erpc"
)

// SpinDefault stands for erpc's own (adaptive) spin window: no WithSpin.
const SpinDefault = time.Duration(math.MinInt64)

// ParseSpin reads a -spin value: a duration, or "default".
func ParseSpin(v string) (time.Duration, error) {
	if v == "default" {
		return SpinDefault, nil
	}
	return time.ParseDuration(v)
}

// SpinString is parseSpin's inverse, for the control line and the header.
func SpinString(d time.Duration) string {
	if d == SpinDefault {
		return "default"
	}
	return d.String()
}

// SpinOptions are the endpoint options for a -spin value.
func SpinOptions(d time.Duration) []erpc.Option {
	if d == SpinDefault {
		return nil
	}
	return []erpc.Option{erpc.WithSpin(d)}
}
