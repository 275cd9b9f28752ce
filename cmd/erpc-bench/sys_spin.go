package main

import (
	"math"
	"time"

	"github.com/erpc-go/erpc"
)

// spinDefault stands for erpc's own (adaptive) spin window: no WithSpin.
const spinDefault = time.Duration(math.MinInt64)

// parseSpin reads a -spin value: a duration, or "default".
func parseSpin(v string) (time.Duration, error) {
	if v == "default" {
		return spinDefault, nil
	}
	return time.ParseDuration(v)
}

// spinString is parseSpin's inverse, for the control line and the header.
func spinString(d time.Duration) string {
	if d == spinDefault {
		return "default"
	}
	return d.String()
}

// spinOptions are the endpoint options for a -spin value.
func spinOptions(d time.Duration) []erpc.Option {
	if d == spinDefault {
		return nil
	}
	return []erpc.Option{erpc.WithSpin(d)}
}
