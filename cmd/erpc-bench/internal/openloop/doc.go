// Package openloop is the slo scenario's open-loop load generator. Several
// lanes (one per client endpoint, each its own goroutine) each send a
// Poisson stream; a request is sent at its planned time whatever happened
// to the earlier ones, so a slow server cannot slow the generator down
// and hide its own queue (coordinated omission). Latency is measured from
// the planned send time; the generator's lag is recorded and the actual
// send times are checked against the exponential distribution
// (Anderson-Darling, checks.go): a point where the generator could not
// keep up is marked invalid rather than reported as the server's. It also
// draws service times (Dists, DrawService), finds the highest throughput
// under an SLO (MaxUnderSLO) and sleeps precisely (timerfd, Sleeper).
//
// It does not know the systems it drives (Target is the slo scenario's
// client) and does not print.
package openloop
